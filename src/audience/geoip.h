/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * geoip: listeners' countries from a MaxMind-format database (<geoip-db>: a GeoLite2 or
 * GeoIP2 Country or City file, or any .mmdb with country/iso_code), read with libmaxminddb.
 * Opened at start-up and read again on SIGHUP (a new file replaces the old one whole; lookups
 * meanwhile see one or the other). It is the session locator (stream/session.h): a
 * listener's country is looked up once, when it joins. Without a database every country is
 * unknown. Also adds the listeners per country of a mount to the stats document.
 */
#ifndef RIMECAST_GEOIP_H
#define RIMECAST_GEOIP_H

#include <libxml/tree.h>

/* Opens (or reopens) the database the config names, or closes it when it names none; on
 * failure the error log says why and countries are unknown until a reload succeeds.
 * Registers the locator. Main thread (start-up, reload). */
void geoip_load(void);
/* Closes the database (at exit, after the workers stopped). */
void geoip_close(void);
/* 1 if a database is in use. */
int geoip_enabled(void);
/* Adds <listeners_by_country><XX>n</XX>...<unknown>n</unknown></listeners_by_country> to a
 * source element of the stats document: the listeners of mount now, per country. */
void geoip_add_countries(xmlNodePtr source, const char *mount);

#endif
