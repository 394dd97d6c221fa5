/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * commands: admin handlers shared between commands.c (the route table) and clients.c (the
 * commands that touch listeners on every worker). Internal to src/admin.
 */
#ifndef RIMECAST_COMMANDS_H
#define RIMECAST_COMMANDS_H

#include "admin/admin.h"

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
void admin_cmd_audience_charts(admin_req_t *a);
/* The document of a top list (audience.c): <audience_top> with from, to, by, mount, sessions
 * and one <entry> (name, sessions, qualified_sessions, tlh_hours) per name; NULL on ENOMEM.
 * Caller frees. */
struct audience_top;
xmlDocPtr admin_audience_top_doc(const struct audience_top *t);
#endif
