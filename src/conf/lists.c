/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * lists: the list items the vocabulary's handlers allocate (see lists.h), and the
 * <http-headers><header name= value= [status=] [type=]/> list of the root and of a <mount>.
 */
#include "conf/lists.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void *conf_new_item(parse_t *p, xmlNodePtr n, size_t size)
{
    void *x = calloc(1, size);

    if (!x)
        config_err(p, n, "out of memory");
    return x;
}

/* An HTTP header name is a token (RFC 9110): no controls, blanks or separators. */
static int header_name_ok(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f ||
            strchr("()<>@,;:\\\"/[]?={}", *s))
            return 0;
    return 1;
}

/* <http-headers><header name= value= [status=] [type=]/> ; obj is the list head */
static int fn_header(parse_t *p, xmlNodePtr n, void *obj)
{
    http_header_conf_t *h = NULL;
    char *type = NULL, *status = NULL;
    int rc = -1;

    if (config_attr(p, n, "type", &type) || config_attr(p, n, "status", &status))
        goto done;
    if (type && strcasecmp(type, "static") != 0) {
        char buf[48];
        config_warn_at(p, "header", NULL, config_line(n),
                       "<header> type \"%s\" is not supported, ignored",
                       config_shown(type, buf, sizeof(buf)));
        rc = 0;
        goto done;
    }
    if (!(h = conf_new_item(p, n, sizeof(*h))))
        goto done;
    APPEND(*(http_header_conf_t **)obj, h);
    if (config_attr_required(p, n, "name", &h->name))
        goto done;
    if (config_attr(p, n, "value", &h->value))
        goto done;
    if (!h->value) {
        config_err(p, n, "<header> needs a value=\"...\" attribute");
        goto done;
    }
    if (!header_name_ok(h->name) || strpbrk(h->value, "\r\n")) {
        config_err(p, n, "<header> name or value contains characters not allowed in HTTP");
        goto done;
    }
    if (status && strpbrk(status, "*?[")) {
        char buf[48];
        config_err(p, n, "<header> status=\"%s\" is an Icecast-KH pattern, not supported: give "
                   "one status code (200), or none for every status",
                   config_shown(status, buf, sizeof(buf)));
        goto done;
    }
    if (status) {
        static const directive_t st = {.name = "status", .type = D_INT, .min = 100, .max = 599};
        long x;
        if (config_number(p, n, &st, status, &x))
            goto done;
        h->status = (int)x;
    }
    rc = 0;
done:
    free(type);
    free(status);
    return rc;
}

static const directive_t headers_dirs[] = {FN("header", fn_header), END};
static const section_t headers_sec = {"http-headers", headers_dirs};

int conf_walk_headers(parse_t *p, xmlNodePtr n, http_header_conf_t **head)
{
    return config_walk(p, n, &headers_sec, head);
}

void conf_free_headers(http_header_conf_t *h)
{
    while (h) {
        http_header_conf_t *next = h->next;
        free(h->name);
        free(h->value);
        free(h);
        h = next;
    }
}
