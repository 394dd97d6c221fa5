/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_record: a session record copied for the store's queue (see audience_record.h).
 */
#include "audience/audience_record.h"

#include <stdlib.h>
#include <string.h>


audience_record_t *audience_record_copy(const session_record_t *r, const char *name)
{
    const char *s[] = {r->mount, r->served, r->address, r->agent, r->referer, r->user,
                       r->country, r->key, name, r->invalid};
    size_t n = sizeof(s) / sizeof(s[0]), size = 0;
    for (size_t i = 0; i < n; i++)
        size += s[i] ? strlen(s[i]) + 1 : 0;
    audience_record_t *e = malloc(sizeof(*e) + size);
    if (!e)
        return NULL;
    *e = (audience_record_t){.r = *r};
    char *p = e->text;
    const char **d[] = {&e->r.mount, &e->r.served, &e->r.address, &e->r.agent, &e->r.referer,
                        &e->r.user, &e->r.country, &e->r.key, &e->server, &e->r.invalid};
    for (size_t i = 0; i < n; i++) {
        *d[i] = NULL;
        if (!s[i])
            continue;
        size_t len = strlen(s[i]) + 1;
        memcpy(p, s[i], len);
        *d[i] = p;
        p += len;
    }
    return e;
}

size_t audience_record_free_list(audience_record_t *list)
{
    size_t n = 0;
    while (list) {
        audience_record_t *next = list->next;
        free(list);
        list = next;
        n++;
    }
    return n;
}
