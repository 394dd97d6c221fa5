/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * lists: internal to src/conf. What the files of the vocabulary (directives.c: the sections
 * of <icecast>; blocks.c: the repeatable blocks) write their tables and lists with: the row
 * macros of a table of directives, the bounds they share, appending to a config list, and
 * the <http-headers> list that both the root and a <mount> hold.
 * Nothing outside src/conf includes this, except the unit tests.
 */
#ifndef RIMECAST_CONF_LISTS_H
#define RIMECAST_CONF_LISTS_H

#include <libxml/tree.h>
#include <stddef.h>

#include "conf/snapshot.h"
#include "conf/walk.h"

#define ROW(n, t, st, f, ...) {.name = n, .type = t, .off = offsetof(st, f), __VA_ARGS__}
#define STR(n, st, f) ROW(n, D_STR, st, f)
#define TEXT(n, st, f) ROW(n, D_STR, st, f, .flags = F_EMPTY_OK)
#define PATH(n, st, f) ROW(n, D_PATH, st, f)
#define MOUNT(n, st, f) ROW(n, D_MOUNT, st, f)
#define INT(n, st, f, lo, hi) ROW(n, D_INT, st, f, .min = lo, .max = hi)
#define SIZE(n, st, f, lo, hi) ROW(n, D_LONG, st, f, .min = lo, .max = hi)
#define BOOL(n, st, f) ROW(n, D_BOOL, st, f, .min = 0, .max = 1, .words = config_bool_words)
#define TRI(n, st, f) ROW(n, D_BOOL, st, f, .min = -1, .max = 1, .words = config_bool_words)
#define SECTION(n, s) {.name = n, .type = D_SECTION, .sub = &s}
#define FN(n, f) {.name = n, .type = D_FN, .fn = f}
#define OLD_FN(n, f, why) {.name = n, .type = D_FN, .fn = f, .flags = F_DEPRECATED, .note = why}
#define OLD_IGNORE(n, why) {.name = n, .type = D_IGNORE, .flags = F_DEPRECATED, .note = why}
#define END {.name = NULL}
/* an Icecast-KH setting not implemented: accepted, then warned about (or refused) by its row in
 * policy.c */
#define KH(n) {.name = n, .type = D_IGNORE}
/* rows with the value a field has until the file sets it */
#define DEF(d) .def = (d), .flags = F_DEFAULT
#define INT_D(n, st, f, lo, hi, d) ROW(n, D_INT, st, f, .min = lo, .max = hi, DEF(d))
#define SIZE_D(n, st, f, lo, hi, d) ROW(n, D_LONG, st, f, .min = lo, .max = hi, DEF(d))
#define BOOL_D(n, st, f, d) ROW(n, D_BOOL, st, f, .min = 0, .max = 1, \
                                .words = config_bool_words, DEF(d))
#define TRI_D(n, st, f, d) ROW(n, D_BOOL, st, f, .min = -1, .max = 1, \
                               .words = config_bool_words, DEF(d))
#define PATH_D(n, st, f, d) ROW(n, D_PATH, st, f, .sdef = (d), .flags = F_DEFAULT)
#define MOUNT_D(n, st, f, d) ROW(n, D_MOUNT, st, f, .sdef = (d), .flags = F_DEFAULT)
#define STR_D(n, st, f, d) ROW(n, D_STR, st, f, .sdef = (d), .flags = F_DEFAULT)
#define TEXT_D(n, st, f, d) ROW(n, D_STR, st, f, .sdef = (d), .flags = F_EMPTY_OK | F_DEFAULT)

#ifndef PKGDATADIR
#define PKGDATADIR "/usr/local/share/rimecast"
#endif
#ifndef LOCALSTATEDIR
#define LOCALSTATEDIR "/usr/local/var"
#endif
#define PORT_MAX 65535
#define SIZE_MAX_BYTES (1L << 30)
#define RATE_MAX 100000000000L /* bits/s: 100 Gbit/s */

#define APPEND(head, item)                                                                     \
    do {                                                                                       \
        __typeof__(item) *tail_ = &(head);                                                     \
        while (*tail_)                                                                         \
            tail_ = &(*tail_)->next;                                                           \
        *tail_ = (item);                                                                       \
    } while (0)

/* A zeroed item of size bytes for element n, or NULL with "out of memory" reported. */
void *conf_new_item(parse_t *p, xmlNodePtr n, size_t size);
/* <http-headers> of n appended to the list *head. */
int conf_walk_headers(parse_t *p, xmlNodePtr n, http_header_conf_t **head);
/* Frees a list of <header> items. */
void conf_free_headers(http_header_conf_t *h);

#endif
