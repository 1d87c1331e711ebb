/* SPDX-License-Identifier: MIT */
/*
 * argp.h for building libbpf-sys's vendored libelf against musl (which has no
 * argp): declarations only. elfutils' configure wants argp, fts and obstack
 * for its tools; libelf uses none of them, but `make -C lib` compiles
 * libeu.a's color.c and printversion.c, which include <argp.h>. Their objects
 * are never linked into the addon (libelf references neither), so nothing
 * here needs a definition. Used by scripts/pack-all.js for *-linux-musl only.
 */
#ifndef NODE_LIBBPF_MUSL_ARGP_H
#define NODE_LIBBPF_MUSL_ARGP_H

#include <errno.h>
#include <stdio.h>

#ifndef __error_t_defined
typedef int error_t;
#define __error_t_defined 1
#endif

struct argp_state;
struct argp_child;

struct argp_option {
  const char *name;
  int key;
  const char *arg;
  int flags;
  const char *doc;
  int group;
};

typedef error_t (*argp_parser_t)(int key, char *arg, struct argp_state *state);

struct argp {
  const struct argp_option *options;
  argp_parser_t parser;
  const char *args_doc;
  const char *doc;
  const struct argp_child *children;
  char *(*help_filter)(int key, const char *text, void *input);
  const char *argp_domain;
};

struct argp_child {
  const struct argp *argp;
  int flags;
  const char *header;
  int group;
};

struct argp_state {
  const struct argp *root_argp;
  int argc;
  char **argv;
  int next;
  unsigned flags;
  unsigned arg_num;
  int quoted;
  void *input;
  void **child_inputs;
  void *hook;
  char *name;
  FILE *err_stream;
  FILE *out_stream;
  void *pstate;
};

#define OPTION_ARG_OPTIONAL 0x1
#define OPTION_HIDDEN 0x2
#define OPTION_ALIAS 0x4
#define OPTION_DOC 0x8
#define OPTION_NO_USAGE 0x10

#define ARGP_ERR_UNKNOWN E2BIG
#define ARGP_KEY_ARG 0
#define ARGP_KEY_ARGS 0x1000006
#define ARGP_KEY_END 0x1000001
#define ARGP_KEY_NO_ARGS 0x1000002
#define ARGP_KEY_INIT 0x1000003
#define ARGP_KEY_FINI 0x1000007
#define ARGP_KEY_SUCCESS 0x1000004
#define ARGP_KEY_ERROR 0x1000005

#define ARGP_HELP_USAGE 0x01
#define ARGP_HELP_SHORT_USAGE 0x02
#define ARGP_HELP_SEE 0x04
#define ARGP_HELP_LONG 0x08
#define ARGP_HELP_EXIT_ERR 0x100
#define ARGP_HELP_EXIT_OK 0x200
#define ARGP_HELP_STD_ERR (ARGP_HELP_SEE | ARGP_HELP_EXIT_ERR)
#define ARGP_HELP_STD_USAGE (ARGP_HELP_SHORT_USAGE | ARGP_HELP_SEE | ARGP_HELP_EXIT_ERR)
#define ARGP_HELP_STD_HELP (ARGP_HELP_SHORT_USAGE | ARGP_HELP_LONG | ARGP_HELP_EXIT_OK)

extern void argp_help(const struct argp *argp, FILE *stream, unsigned flags, char *name);
extern void argp_error(const struct argp_state *state, const char *fmt, ...);
extern void argp_state_help(const struct argp_state *state, FILE *stream, unsigned flags);
extern error_t argp_parse(const struct argp *argp, int argc, char **argv, unsigned flags, int *arg_index, void *input);

#endif
