/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * commands: admin handlers shared between commands.c (the route table) and clients.c (the
 * commands that touch listeners on every worker). Internal to src/admin.
 */
#ifndef RIMECAST_COMMANDS_H
#define RIMECAST_COMMANDS_H

#include "admin/admin.h"
#include "core/buf.h"

/* listclients?mount=: <icestats><source mount><Listeners/><listener><IP/><UserAgent/>
 * <Connected/><ID/></listener>...</source></icestats> */
void admin_cmd_listclients(admin_req_t *a);
/* moveclients?mount=&destination=: moves every listener (they keep playing) as far as the
 * destination's max-listeners allows (the message says how many stayed); 400 if the
 * destination is of the other family (Ogg / non-Ogg); without destination, the list of other
 * mounts to choose from. */
void admin_cmd_moveclients(admin_req_t *a);
/* killclient?mount=&id=: disconnects that listener of that mount. */
void admin_cmd_killclient(admin_req_t *a);

/* manageauth?mount=&action=list|add|delete: the users of the mount's htpasswd file
 * (manageauth.c). */
void admin_cmd_manageauth(admin_req_t *a);

/* audience?from=&to=&mount=&by=: the audience figures of a period (audience.c); also .csv */
void admin_cmd_audience(admin_req_t *a);
/* audience/top?from=&to=&mount=&by=agent|referer&limit=: the top players or referrers
 * (audience.c); audience_charts: the charts page's document (min_session). */
void admin_cmd_audience_top(admin_req_t *a);
/* /admin/audience/sessions: the period's session records as a W3C or TSV log, streamed
 * (admin/audience_sessions.c). */
void admin_cmd_audience_sessions(admin_req_t *a);
/* The span a request asks for: from and to (unix seconds or ISO 8601, the last 24 hours by
 * default), day=YYYY-MM-DD (that UTC day), or, with span_period, period= 24h, 7d, 30d (the
 * last of them), YYYY-MM-DD or YYYY-MM (a UTC month); one of them (period=all: from and to,
 * as the figures take it); NULL, or what is wrong with it. Without span_period, period= is
 * left to the caller (the figures' buckets, admin_audience_cut). */
const char *admin_audience_span(admin_req_t *a, int span_period, int64_t *from_ms,
                                int64_t *to_ms);
/* The answer to an audience query that failed (err < 0: 503 without a database or while it
 * cannot be reached, else 500 saying what failed): 1 when sent, 0 for err >= 0. */
int admin_audience_failed(admin_req_t *a, int err, const char *what);
/* period= (hour, day, the default, or all) and traffic= (net, the default, or gross) of a
 * figures query over [from, to): its step (0: the whole period) and gross; NULL, or what is
 * wrong with them. */
const char *admin_audience_cut(admin_req_t *a, int64_t from_ms, int64_t to_ms, int64_t *step_ms,
                               int *gross);
/* A CSV (an attachment named file) or JSON body made for an audience query, sent and freed;
 * NULL: a 500. */
void admin_audience_send(admin_req_t *a, int csv, char *body, size_t len, const char *file);
/* Text inside a quoted CSV field of the audience's answers: control characters dropped,
 * quotes doubled. */
void admin_audience_csv_text(buf_t *b, const char *s);
void admin_cmd_audience_charts(admin_req_t *a);
/* /admin/audience/ads[.json|.csv] (or format=): the ads figures per mount and creative
 * (admin/audience_ads.c); the <ads_mount> and <ads_creative> elements of an answer under
 * parent (an xmlNodePtr; the audience page's <ads> too). */
struct audience_ads_query;
void admin_cmd_audience_ads(admin_req_t *a);
void admin_audience_ads_xml(void *parent, const struct audience_ads_query *q);
/* The document of a top list (audience.c): <audience_top> with from, to, by, mount, sessions
 * and one <entry> (name, sessions, qualified_sessions, tlh_hours) per name; NULL on ENOMEM.
 * Caller frees. */
struct audience_top;
xmlDocPtr admin_audience_top_doc(const struct audience_top *t);
#endif
