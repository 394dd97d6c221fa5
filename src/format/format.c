/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * format: handler selection by Content-Type and the generic create/free wrappers.
 */
#include "format/format.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int type_is(const char *ct, const char *name)
{
    size_t n = strlen(name);
    if (strncasecmp(ct, name, n) != 0)
        return 0;
    return ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ' || ct[n] == '\t';
}

const format_ops_t *format_for_content_type(const char *ct)
{
    static const char *const ogg_types[] = {"application/ogg", "audio/ogg",  "video/ogg",
                                            "application/x-ogg", "audio/opus", "audio/flac+ogg",
                                            "audio/x-ogg"};
    if (ct) {
        for (size_t i = 0; i < sizeof(ogg_types) / sizeof(ogg_types[0]); i++)
            if (type_is(ct, ogg_types[i]))
                return &format_ogg_ops;
    }
    return &format_generic_ops;
}

format_t *format_new(const format_ops_t *ops, const format_sink_t *sink)
{
    format_t *f = calloc(1, sizeof(*f));
    if (!f)
        return NULL;
    f->ops = ops;
    f->sink = *sink;
    if (ops->init && ops->init(f) < 0) {
        free(f);
        return NULL;
    }
    return f;
}

void format_free(format_t *f)
{
    if (!f)
        return;
    if (f->ops->destroy)
        f->ops->destroy(f);
    free(f);
}
