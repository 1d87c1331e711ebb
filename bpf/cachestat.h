/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* cachestat: the page-cache events counted in the kernel (the .bss array
 * `counts`, indexed by enum cachestat_event) */
#ifndef __CACHESTAT_H
#define __CACHESTAT_H

enum cachestat_event {
	CACHESTAT_ACCESSED,		/* folio_mark_accessed / mark_page_accessed */
	CACHESTAT_ADDED,		/* filemap_add_folio / add_to_page_cache_lru */
	CACHESTAT_DIRTIED,		/* folio_account_dirtied / account_page_dirtied, or writeback_dirty_folio/page */
	CACHESTAT_BUFFER_DIRTIED,	/* mark_buffer_dirty */
	CACHESTAT_EVENTS,
};

#endif /* __CACHESTAT_H */
