/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * policy: the one list of icecast.xml settings that are parsed but not implemented yet (among
 * them Icecast-KH's, each a KH() row of directives.c), and what happens to each: refused at
 * start-up (and on reload) when ignoring it would open access, else warned about once. Work
 * that implements a setting deletes its row here; the refusal or warning goes away with it.
 * conf/README.md lists the same settings (a unit test checks that every row is mentioned
 * there). Applied by config_walk() in walk.c.
 */
#include <stdio.h>
#include <string.h>

#include "conf/walk.h"

#define KH_REFUSE(sec, el, when, why) {sec, el, NULL, POLICY_REFUSE, when, "Icecast-KH's; " why}
#define KH_WARN(sec, el, when, why) {sec, el, NULL, POLICY_WARN, when, "Icecast-KH's; " why}
#define P POLICY_PRESENT
#define E POLICY_ENABLED

const policy_t config_policies[] = {
    /* refused: ignoring them would let in someone the file keeps out */
    KH_REFUSE("icecast", "include", P, "put the included file's settings in this file"),
    KH_REFUSE("mount", "ban-client", E, "no address is banned after it listened; list "
              "addresses in <deny-ip>"),

    /* warned once: the server works, without the feature */
    KH_WARN("icecast", "master-bind", P, "the master's stream list is asked for from any "
            "address"),
    KH_WARN("icecast", "master-relay-auth", E, "relays of the master's streams log in as "
            "<master-username>"),
    KH_WARN("icecast", "master-redirect", E, "the master sends no listeners here; see "
            "<redirect-siblings>"),
    KH_WARN("icecast", "max-redirect-slaves", E, "no listeners are redirected to slaves; see "
            "<redirect-siblings>"),
    KH_WARN("icecast", "redirect", P, "see <redirect-siblings>"),
    KH_WARN("icecast", "master", P, "use <master-server>, <master-server-port>, "
            "<master-username>, <master-password>, <master-update-interval>"),
    KH_WARN("limits", "max-bandwidth", E, "listeners are limited by number (<max-listeners>), "
            "not by bandwidth"),
    KH_WARN("limits", "min-queue-size", E, "every listener may lag up to <queue-size>"),
    KH_WARN("limits", "inactivity-timeout", E, "the server runs without sources"),
    KH_WARN("logging", "preroll-log", P, "prerolls and intros played are in the session log"),
    KH_WARN("logging", "accesslog_ip", P, "the access log holds every address; see "
            "<anonymize-ip> in <audience>"),
    KH_WARN("logging", "accesslog_exclude_ext", P, "every request is logged"),
    KH_WARN("logging", "accesslog_lines", P, "/admin/log shows the error log only"),
    KH_WARN("logging", "errorlog_lines", P, "/admin/log shows the last error-log lines kept"),
    KH_WARN("logging", "playlistlog_lines", P, "/admin/log shows the error log only"),
    KH_WARN("listen-socket", "queue-len", E, "the listen backlog is the system's"),
    KH_WARN("listen-socket", "so-mss", E, "the system's MSS is used"),
    KH_WARN("mount", "priority", P, "exact mount names come first, then patterns in file "
            "order"),
    KH_WARN("mount", "min-queue-size", E, "every listener may lag up to <queue-size>"),
    KH_WARN("mount", "file-seekable", P, "files are served with ranges"),
    KH_WARN("mount", "hijack", E, "a second source is refused while the first is connected"),
    KH_WARN("mount", "allow-chunked", P, "chunked sources are always accepted"),
    KH_WARN("mount", "max-bandwidth", E, "listeners are limited by number (<max-listeners>), "
            "not by bandwidth"),
    KH_WARN("mount", "wait-time", E, "the mount is free as soon as its source leaves"),
    KH_WARN("mount", "filter-theora", E, "the stream is passed on whole"),
    KH_WARN("mount", "skip-accesslog", E, "its listeners are in the access log"),
    KH_WARN("mount", "max-send-size", E, "listeners are written per <write-window>"),
    KH_WARN("mount", "linger-for", E, "listeners follow the fallbacks when the source leaves"),
    KH_WARN("mount", "redirect", P, "listeners are not redirected; see <redirect-siblings>"),
    KH_WARN("mount", "redirect-to", P, "listeners are not redirected; see <redirect-siblings>"),
    KH_WARN("mount", "ogg-passthrough", E, "Ogg streams are checked page by page"),
    KH_WARN("mount", "admin_comments_only", E, "the source's comments are shown too"),
    KH_WARN("mount", "allow-url-ogg-metadata", P, "/admin/metadata updates Ogg mounts always"),
    KH_WARN("mount", "intro-skip-replay", E, "a returning listener hears the intro again"),
    KH_WARN("mount", "so-sndbuf", E, "set <so-sndbuf> in <listen-socket>"),
    KH_WARN("mount", "max-stream-duration", E, "a source streams for as long as it sends"),
    KH_WARN("mount", "preroll-log", P, "prerolls and intros played are in the session log"),
    KH_WARN("mount", "accesslog", P, "the mount's listeners are in the server's access log"),
    KH_WARN("relay", "enable", P, "a <relay> in the file runs; remove it to stop it"),
    KH_WARN("relay", "retry-delay", P, "a failed relay is retried after a backoff doubling up "
            "to 60 s (docs/RELAYS.md)"),
    KH_WARN("relay", "run-on", P, "the relay runs whether the mount has listeners or not, "
            "unless <on-demand>"),
    KH_WARN("relay", "http-headers", P, "no extra header is sent upstream"),
    KH_WARN("host", "priority", P, "upstreams are tried in file order"),
    KH_WARN("host", "http-headers", P, "no extra header is sent upstream"),
    {NULL, NULL, NULL, 0, 0, NULL},
};

#undef P
#undef E

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
