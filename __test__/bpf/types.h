/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef __TYPES_H
#define __TYPES_H

/* every kind of field a record can hold, with values the test knows */

enum color {
	RED = 0,
	GREEN = 1,
	BLUE = 7,
};

struct inner {
	__u16 a;
	__s8 b;
	char tag[4];
};

struct kinds {
	__u32 small;		/* a u32 followed by a u64: padding at 4 */
	__u64 big;
	__s64 negative;
	__s32 neg32;
	__s16 neg16;
	__s8 neg8;
	__u8 byte;
	bool flag;
	char comm[16];
	__u8 raw[4];
	__u32 arr[3];
	struct inner nested;
	struct inner pair[2];
	union {
		__u32 as_u32;
		__u8 as_bytes[4];
	} u;
	enum color color;
	enum color unnamed_color;
	unsigned int bits_lo : 3;
	unsigned int bits_hi : 5;
	int sbits : 4;
	const void *ptr;
	struct {
		__u32 x;
		__u32 y;
	};
	__u32 tail_len;
	__u8 tail[];
};

#define TAIL_LEN 5

/* a hash key of two fields, one a string */
struct name_key {
	__u32 id;
	char name[8];
};

struct counter {
	__u64 count;
	__s32 delta;
	enum color color;
};

#endif /* __TYPES_H */
