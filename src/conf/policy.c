/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy: the one list of icecast.xml settings that are parsed but not implemented yet, and
 * what happens to each: refused at start-up (and on reload) when ignoring it would open
 * access, else warned about once. Work that implements a setting deletes its row here; the
 * refusal or warning goes away with it. conf/README.md lists the same settings (a unit test
 * checks that every row is mentioned there). Applied by config_walk() in walk.c.
 */
#include <stdio.h>
#include <string.h>

#include "conf/walk.h"

const policy_t config_policies[] = {
    /* refused: ignoring them would let in someone the file keeps out */

    /* warned once: the server works, without the feature */
    {NULL, NULL, NULL, 0, 0, NULL},
};

const policy_t *config_policy_find(const char *section, const char *element,
                                   const char *attribute)
{
    for (const policy_t *r = config_policies; r->element; r++)
        if (strcmp(r->section, section) == 0 && strcmp(r->element, element) == 0 &&
            ((!r->attribute && !attribute) ||
             (r->attribute && attribute && strcmp(r->attribute, attribute) == 0)))
            return r;
    return NULL;
}

int config_policy_apply(parse_t *p, xmlNodePtr n, const char *section, const char *attribute,
                        int enabled)
{
    const char *element = (const char *)n->name;
    const policy_t *r = config_policy_find(section, element, attribute);
    char what[160], setting[100], key[200];

    if (!r || (r->when == POLICY_ENABLED && !enabled))
        return 0;
    if (attribute) {
        snprintf(what, sizeof(what), "%s=\"...\" on <%s> in <%s>", attribute, element, section);
        snprintf(setting, sizeof(setting), "%s %s", element, attribute);
    } else {
        snprintf(what, sizeof(what), "<%s> in <%s>", element, section);
        snprintf(setting, sizeof(setting), "%s", element);
    }
    if (r->action == POLICY_REFUSE)
        return config_err(p, n, "%s is not supported yet: %s; remove it", what, r->why);
    snprintf(key, sizeof(key), "policy/%s/%s", section, setting);
    config_warn_at(p, setting, key, config_line(n), "%s is not supported yet, ignored: %s", what,
                   r->why);
    return 0;
}
