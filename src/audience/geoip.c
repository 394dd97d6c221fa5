/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * geoip: the MaxMind database and the country lookup (see geoip.h). The handle is swapped
 * under a read-write lock: lookups (a listener joining: the cold path) take it shared.
 */
#include "audience/geoip.h"

#include <maxminddb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/config.h"
#include "core/log.h"
#include "net/server.h"
#include "stream/session.h"

static pthread_rwlock_t db_lock = PTHREAD_RWLOCK_INITIALIZER;
static MMDB_s *db;  /* NULL: none */

/* The ISO code at one of the paths a Country or City database has it. */
static int lookup(const char *ip, char *cc, size_t cap)
{
    int rc = -1;
    pthread_rwlock_rdlock(&db_lock);
    if (db) {
        int gai = 0, err = 0;
        MMDB_lookup_result_s res = MMDB_lookup_string(db, ip, &gai, &err);
        MMDB_entry_data_s data;
        if (gai == 0 && err == MMDB_SUCCESS && res.found_entry &&
            ((MMDB_get_value(&res.entry, &data, "country", "iso_code", NULL) == MMDB_SUCCESS &&
              data.has_data) ||
             (MMDB_get_value(&res.entry, &data, "registered_country", "iso_code", NULL) ==
                  MMDB_SUCCESS && data.has_data)) &&
            data.type == MMDB_DATA_TYPE_UTF8_STRING && data.data_size > 0 &&
            data.data_size < cap) {
            rc = 0;
            for (uint32_t i = 0; i < data.data_size; i++) {
                char ch = data.utf8_string[i];
                if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z')))
                    rc = -1; /* only letters: it becomes an element name and a label */
                cc[i] = ch;
            }
            cc[data.data_size] = '\0';
        }
    }
    pthread_rwlock_unlock(&db_lock);
    return rc;
}

static void swap_db(MMDB_s *next)
{
    pthread_rwlock_wrlock(&db_lock);
    MMDB_s *old = db;
    db = next;
    pthread_rwlock_unlock(&db_lock);
    if (old) {
        MMDB_close(old);
        free(old);
    }
}

void geoip_load(void)
{
    const config_t *cfg = server_config();
    session_set_locator(lookup);
    if (!cfg->geoip_db) {
        swap_db(NULL);
        return;
    }
    MMDB_s *next = calloc(1, sizeof(*next));
    int rc = next ? MMDB_open(cfg->geoip_db, MMDB_MODE_MMAP, next) : MMDB_OUT_OF_MEMORY_ERROR;
    if (rc != MMDB_SUCCESS) {
        log_error("GeoIP: cannot read %s: %s; countries are unknown", cfg->geoip_db,
                  MMDB_strerror(rc));
        free(next);
        swap_db(NULL);
        return;
    }
    log_info("GeoIP: countries from %s (%s)", cfg->geoip_db, next->metadata.database_type);
    swap_db(next);
}

void geoip_close(void)
{
    session_set_locator(NULL);
    swap_db(NULL);
}

int geoip_enabled(void)
{
    pthread_rwlock_rdlock(&db_lock);
    int on = db != NULL;
    pthread_rwlock_unlock(&db_lock);
    return on;
}

static void add_country(const char *cc, long n, void *arg)
{
    char num[32];
    snprintf(num, sizeof(num), "%ld", n);
    xmlNewTextChild(arg, NULL, BAD_CAST(cc[0] ? cc : "unknown"), BAD_CAST num);
}

void geoip_add_countries(xmlNodePtr source, const char *mount)
{
    xmlNodePtr node = xmlNewChild(source, NULL, BAD_CAST "listeners_by_country", NULL);
    if (node)
        session_countries(mount, add_country, node);
}
