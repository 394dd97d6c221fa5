/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audit: the error-log line of an admin action that changes something (a listener kicked or
 * moved, a source killed, metadata set, a fallback set, a user added or deleted): one line per
 * action, "admin: <what>, by <who>", who being the role and user of the credentials and the
 * client's address, escaped. Icecast logs some of these ("Admin request: client N removed");
 * here every one. Commands that only read (stats, lists, the log) are not logged.
 */
#ifndef RIMECAST_AUDIT_H
#define RIMECAST_AUDIT_H

#include "admin/admin.h"

#define AUDIT_WHO_LEN 400

/* Who sent a, while its connection is at hand (before it is parked, or found parked): 'admin
 * "name" from ADDR' or 'source user "name" from ADDR' (admin: a used admin credentials, else
 * those of a source); a password given in the URL instead (Shoutcast's admin.cgi) shows as
 * "(password in the URL)". Written to who (AUDIT_WHO_LEN bytes). */
void audit_who(admin_req_t *a, int admin, char *who);

/* Logs "admin: <what>, by <who>" (info). Client text in the arguments must be escaped. */
void audit_log(const char *who, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
