/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * stats: Icecast 2.4's XML documents built from live state when someone asks: <icestats> with
 * the global counters and one <source> per mount (elements in alphabetical order, as Icecast
 * writes them), the listmounts document and the plain streamlist. Counters are read from the
 * typed atomics of server_t and mount_t; nothing is stored as text. Every string that came
 * from a client goes through stats_add_text(), which makes it valid UTF-8 XML text (libxml2
 * escapes it on output). This file does not answer requests (see admin/ and router/router.c).
 */
#ifndef RIMECAST_STATS_H
#define RIMECAST_STATS_H

#include <stddef.h>
#include <libxml/tree.h>

typedef struct mount mount_t;
typedef struct conn conn_t;

/* Live mounts, referenced and sorted by name. include_hidden: 0 leaves out <hidden> mounts.
 * Returns the count (0 with *out NULL when none) or -ENOMEM; free with stats_mounts_free. */
int stats_mounts(mount_t ***out, int include_hidden);
void stats_mounts_free(mount_t **v, int n);

/* The <icestats> document. admin: include hidden mounts, each mount's <authenticator> (its
 * <authentication type>, absent without one) and, for the whole document (mount NULL), the
 * running config's start-up warnings as <config-warnings> and the configured mounts with
 * htpasswd users as <htpasswd-mounts><mount/>...</htpasswd-mounts>. mount: NULL for all,
 * else only that mount; *found (may be NULL) is set to 0 when it names no live (visible)
 * mount, and the document then has no <source>. via: the connection that asked (NULL = none):
 * one that came over TLS gets https listen URLs. NULL on ENOMEM. Caller frees with
 * xmlFreeDoc. */
xmlDocPtr stats_document(int admin, const char *mount, int *found, const conn_t *via);

/* listmounts: <icestats><source mount><fallback/><listeners/><Connected/><content-type/>...
 * exclude (may be NULL): leave this mount out and add <current_source> (moveclients form). */
xmlDocPtr stats_listmounts_document(const char *exclude);

/* streamlist.txt: one visible mount name per line (malloc'd, *len set). NULL on ENOMEM. */
char *stats_streamlist(size_t *len);

/* Adds <name>value</name> under parent; value is made valid UTF-8 (Latin-1 input is
 * converted) with XML-invalid control characters dropped. NULL value adds nothing. */
xmlNodePtr stats_add_text(xmlNodePtr parent, const char *name, const char *value);
/* Same for a number. */
xmlNodePtr stats_add_number(xmlNodePtr parent, const char *name, long long value);
/* Valid UTF-8 without XML-invalid control characters (malloc'd), for any client string. */
char *stats_clean_text(const char *value);
/* The bitrate (kbit/s) shown for m in the stats and the directory listing: what the source or
 * the <mount> said (ice-bitrate, icy-br, <bitrate>) when they did, else what the audio shows
 * (the "audio_bitrate" tag: MP3 and AAC frames, a Vorbis nominal bitrate), rounded, in buf;
 * NULL when neither. */
const char *stats_bitrate(mount_t *m, char *buf, size_t cap);

/* The mount's <listenurl> (Icecast-KH) when its <mount> block sets one, else
 * "http://<hostname>:<first port><mount>" into buf; for a connection that came over TLS
 * (via->tls), "https://<hostname>:<the port it came to><mount>". via may be NULL. */
void stats_listenurl(char *buf, size_t cap, const char *mount, const conn_t *via);

/* A fresh document with an empty root element of this name. */
xmlDocPtr stats_new_doc(const char *root);

#endif
