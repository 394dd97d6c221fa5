/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_sqlite_figures: the figures of a period on the SQLite store, every bucket made in
 * one pass over its sessions read by one query (see audience_sqlite.h).
 */
#include "audience/audience_sqlite.h"

#include <errno.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audience/audience_intern.h"
#include "audience/audience_live.h"
#include "audience/audience_store.h"

/* ---- the sessions going on ----
 * copied into a temporary table for each query (audience_live.h: with the addresses as the
 * store keeps them); the figures read the stored and the live ones as one. */
static const char live_sql[] =
    "CREATE TEMP TABLE IF NOT EXISTS live (mount TEXT NOT NULL, start_ms INTEGER NOT NULL,"
    " end_ms INTEGER NOT NULL, ip TEXT NOT NULL, user_agent TEXT, country TEXT,"
    " preroll INTEGER NOT NULL, listener_key TEXT, invalid TEXT NOT NULL);"
    "DELETE FROM temp.live;";
static const char live_insert_sql[] =
    "INSERT INTO temp.live VALUES (?,?,?,?,?,?,?,?,?)";

static void bind_text_or_null(sqlite3_stmt *s, int i, const char *t)
{
    if (t)
        sqlite3_bind_text(s, i, t, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(s, i);
}

static int insert_live(sqlite3_stmt *s, const audience_live_row_t *e)
{
    sqlite3_reset(s);
    bind_text_or_null(s, 1, e->mount);
    sqlite3_bind_int64(s, 2, e->r.start_ms);
    sqlite3_bind_int64(s, 3, e->r.end_ms);
    bind_text_or_null(s, 4, e->ip);
    bind_text_or_null(s, 5, e->agent);
    bind_text_or_null(s, 6, e->cc[0] ? e->cc : NULL);
    sqlite3_bind_int(s, 7, e->r.preroll);
    bind_text_or_null(s, 8, e->key[0] ? e->key : NULL);
    sqlite3_bind_text(s, 9, e->invalid, -1, SQLITE_STATIC);
    return sqlite3_step(s) == SQLITE_DONE ? 0 : -EIO;
}

/* Fills temp.live (made when missing) with the qualified sessions going on. 0, -ENOMEM or
 * -EIO. */
static int live_snapshot(sqlite3 *db, int qualify_s, int anonymize)
{
    audience_live_t l = {0};
    sqlite3_stmt *ins = NULL;
    int err = audience_live_copy(&l, qualify_s, anonymize);
    if (!err && (sqlite3_exec(db, live_sql, NULL, NULL, NULL) != SQLITE_OK ||
                 sqlite3_prepare_v2(db, live_insert_sql, -1, &ins, NULL) != SQLITE_OK))
        err = -EIO;
    for (size_t i = 0; !err && i < l.n; i++)
        err = insert_live(ins, &l.v[i]);
    audience_live_free(&l);
    sqlite3_finalize(ins);
    return err;
}

/* ---- figures ---- */

/* The sessions that overlap the period [?1, ?2) (with pauses, widened by AUDIENCE_CHAIN_MS
 * each side: the chains of its sessions), stored and going on, by start (the index on
 * start_ms gives the stored ones in that order; SQLite merges the few going on into them): ?3
 * is the longest session (see "The lower bound" below), ?4 a mount or NULL for all, ?5 a
 * server or NULL for all, ?6 this server's name (the sessions going on are its own, and so
 * are records without a name, written before records had one), ?7 1 for the valid sessions
 * only (net), 0 for every one (gross). A record counts up to its CAPPED_END. */
/* A record's end in the figures: at most AUDIENCE_SESSION_CAP_MS after its start. */
#define CAPPED_END "MIN(end_ms, start_ms + " AUDIENCE_SESSION_CAP_SQL ")"

static const char period_sql[] =
    "SELECT mount, start_ms, end_ms, ip, IFNULL(user_agent, ''), IFNULL(country, ''),"
    " preroll, now, listener_key"
    " FROM (SELECT mount, start_ms, " CAPPED_END " AS end_ms, ip, user_agent, country,"
    "  preroll, 0 AS now, IFNULL(server, ?6) AS srv, listener_key, invalid FROM sessions"
    "  UNION ALL SELECT mount, start_ms, " CAPPED_END ", ip, user_agent, country, preroll, 1,"
    "  ?6, listener_key, invalid FROM temp.live)"
    " WHERE start_ms >= ?1 - ?3 AND start_ms < ?2 AND end_ms > ?1"
    " AND (?4 IS NULL OR mount = ?4) AND (?5 IS NULL OR srv = ?5)"
    " AND (?7 = 0 OR invalid = '') ORDER BY start_ms";

/* The servers with sessions in the period [?1, ?2), whatever mount and server were asked, in
 * byte order: ?3 this server's name (of the sessions going on, and of records without one),
 * ?4 the longest session (the lower bound on start_ms, as above). */
static const char servers_sql[] =
    "SELECT IFNULL(server, ?3) AS srv FROM sessions"
    " WHERE start_ms >= ?1 - ?4 AND start_ms < ?2 AND " CAPPED_END " > ?1"
    " UNION SELECT ?3 FROM temp.live WHERE start_ms < ?2 AND " CAPPED_END " > ?1 ORDER BY srv";

static const char longest_sql[] =
    "SELECT MAX(IFNULL((SELECT MAX(end_ms - start_ms) FROM sessions), 0),"
    " IFNULL((SELECT MAX(end_ms - start_ms) FROM temp.live), 0))";

/* ---- every bucket in one pass ----
 *
 * One query reads the sessions that overlap the period, stored and going on, each kept as a
 * fig_session_t with its texts turned into ids (audience_intern.h: mounts and countries
 * numbered in the order SQLite sorts text, so the rows come out as its ORDER BY gave them).
 * Then the buckets are made in order: a list holds the sessions that overlap the current one
 * (those still on from the one before, then those that begin in it), and each adds itself to
 * its mount's figures and the server's. CUME and the countries sort the (group, id) keys of
 * the bucket's sessions and count the distinct ones. The peak comes from one sweep over the
 * starts and ends of the whole period (an end at t before a start at t) that carries from
 * one bucket to the next how many are listening at its start; a record that ends where it
 * starts, or before (a clock stepped back), listens at no time and takes no part in it.
 *
 * The lower bound: the store indexes start_ms (alone and after mount), not end_ms. A session
 * that overlaps the period began at most the longest session's length before it, so the
 * query starts there, once per call; the sessions of that span that ended before the period
 * are dropped by SQLite and never reach C. Finding the longest reads the table once (0.1 s
 * for a million records). An index on end_ms would add a third index to every record written
 * and, for a period in the past, bound nothing (everything since ends after it); with one
 * query instead of three per bucket the span before the period costs one scan, not one per
 * bucket.
 *
 * Memory, for n sessions that overlap the period: the sessions (32 bytes each, as read), two
 * lists of their indices (by end, and those of the current bucket: 8 bytes), the keys of the
 * current bucket (8 bytes per session in it and group, twice that while qsort merges them: up to
 * 32 bytes a session for period=all, where every session is in the one bucket), and while the
 * sessions are read each distinct mount, country, address, user agent and listener (address and
 * agent) once, with 30 to 40 bytes of table each (all but the mounts' and countries' freed
 * once read). Measured on a store of 1 million sessions over 30 days from 317 000 addresses: 57 MB
 * by day, 75 MB for the period at once; were each session from an address of its own, the
 * tables would add about 50 MB while reading.
 */

typedef struct fig_session {
    int64_t start_ms, end_ms;
    uint32_t group;            /* its mount's id, then (sorted) 1... in byte order: 0 is the
                                * server */
    uint32_t country;          /* its country's id, then its place in byte order ("": none) */
    uint32_t listener;         /* its listener key, else address and agent (CUME) */
    uint8_t qualified, preroll, now;
    uint8_t keyed;             /* it has a listener key (a record made before has none) */
    uint8_t cont;              /* in the current bucket: it continues the chain of the session
                                * before it (a pause of at most <resume-seconds>) */
    int64_t chain_ms;          /* in the current bucket: its chain's length (time listened) */
    int64_t prev_end;          /* when cont: where the session it continues ended */
} fig_session_t;

typedef struct fig_cell {      /* a group's figures in the bucket being made */
    uint64_t sessions, qualified, listened_ms, prerolls, in_progress, cume;
    uint64_t active, started, aqh_quarters;
    int64_t peak;
} fig_cell_t;

typedef struct fig_edge {    /* a session's time in one of its edge quarter-hours */
    uint32_t group, listener;
    int64_t quarter, ms;
} fig_edge_t;

typedef struct figures {
    audience_query_t *q;
    size_t rows_room;
    fig_session_t *s;          /* by start, as read */
    size_t n, room;
    audience_intern_t mounts, countries, addresses, agents, listeners;
    uint32_t *mount_of, *country_of; /* by place in byte order: the id */
    uint32_t *by_end;          /* the sessions that listen some time, by end */
    size_t nby_end, ends_swept, starts_swept;
    uint32_t *active;          /* the sessions of the current bucket */
    size_t nactive, next;      /* next: the first session not yet in a bucket */
    uint32_t *near;            /* with pauses: those of the bucket widened by AUDIENCE_CHAIN_MS
                                * each side, sorted by listener, mount and start */
    size_t nnear, near_next;
    uint32_t *chain_of;        /* per place in near: the place of its chain's first session */
    int64_t *chain_len;        /* per place in near (a chain's first): the chain's length */
    uint64_t *keys;            /* (group << 32 | id) of the current bucket */
    size_t nkeys, keys_room;
    uint32_t *touched;         /* the mounts (groups > 0) with sessions in the current bucket */
    size_t ntouched;
    fig_edge_t *edges;         /* AQH: the first and last quarter-hours of the bucket's
                                * sessions (audience_quarter_edges), summed per listener */
    size_t nedges, edges_room;
    fig_cell_t *cell;          /* per group */
    int64_t *on;               /* per group: listening at the sweep's time */
    int64_t longest_ms;        /* the longest session (read_period) */
} figures_t;

/* The text of column i as an id of t ("" for NULL). */
static int64_t intern_column(audience_intern_t *t, sqlite3_stmt *st, int i)
{
    const unsigned char *text = sqlite3_column_text(st, i);
    return audience_intern(t, text ? (const char *)text : "", (size_t)sqlite3_column_bytes(st, i));
}

static int read_session(figures_t *f, sqlite3_stmt *st)
{
    fig_session_t *s = audience_intern_room(f->s, &f->room, f->n, sizeof(*s));
    if (!s)
        return -ENOMEM;
    f->s = s;
    fig_session_t *e = &f->s[f->n];
    *e = (fig_session_t){.start_ms = sqlite3_column_int64(st, 1),
                         .end_ms = sqlite3_column_int64(st, 2),
                         .preroll = sqlite3_column_int64(st, 6) != 0,
                         .now = sqlite3_column_int64(st, 7) != 0};
    e->chain_ms = e->end_ms - e->start_ms;
    e->qualified = e->chain_ms >= (int64_t)f->q->qualify_s * 1000;
    e->keyed = sqlite3_column_type(st, 8) != SQLITE_NULL;
    int64_t mount = intern_column(&f->mounts, st, 0);
    int64_t country = intern_column(&f->countries, st, 5);
    if (mount < 0 || country < 0)
        return -ENOMEM;
    e->group = (uint32_t)mount;
    e->country = (uint32_t)country;
    if (e->keyed) {
        /* the listener key (32 bytes: never the 8 of a pair below) */
        int64_t listener = intern_column(&f->listeners, st, 8);
        if (listener < 0)
            return -ENOMEM;
        e->listener = (uint32_t)listener;
    } else if (e->qualified || f->q->resume_s) {
        /* the pair as CUME counts it: an address holds no newline, so this is the pair
         * address "\n" agent that SQL would compare */
        int64_t address = intern_column(&f->addresses, st, 3);
        int64_t agent = intern_column(&f->agents, st, 4);
        uint32_t pair[2] = {(uint32_t)address, (uint32_t)agent};
        int64_t listener = address < 0 || agent < 0
                               ? -ENOMEM
                               : audience_intern(&f->listeners, pair, sizeof(pair));
        if (listener < 0)
            return -ENOMEM;
        e->listener = (uint32_t)listener;
    }
    f->n++;
    return 0;
}

static int read_period(figures_t *f, sqlite3 *db)
{
    const audience_query_t *q = f->q;
    sqlite3_stmt *longest = NULL, *st = NULL;
    int err = -EIO, rc = SQLITE_DONE;
    if (sqlite3_prepare_v2(db, longest_sql, -1, &longest, NULL) == SQLITE_OK &&
        sqlite3_step(longest) == SQLITE_ROW &&
        sqlite3_prepare_v2(db, period_sql, -1, &st, NULL) == SQLITE_OK) {
        int64_t widen = q->resume_s ? AUDIENCE_CHAIN_MS : 0;
        sqlite3_bind_int64(st, 1, q->from_ms - widen);
        sqlite3_bind_int64(st, 2, q->to_ms + widen);
        f->longest_ms = sqlite3_column_int64(longest, 0);
        sqlite3_bind_int64(st, 3, f->longest_ms);
        if (q->mount)
            sqlite3_bind_text(st, 4, q->mount, -1, SQLITE_STATIC);
        if (q->server) {
            sqlite3_bind_text(st, 5, q->server, -1, SQLITE_STATIC);
            sqlite3_bind_text(st, 6, audience_store_server_name(), -1, SQLITE_TRANSIENT);
        }
        sqlite3_bind_int(st, 7, !q->gross);
        err = 0;
        while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW)
            err = read_session(f, st);
        if (!err && rc != SQLITE_DONE)
            err = -EIO;
    }
    sqlite3_finalize(longest);
    sqlite3_finalize(st);
    return err;
}

static int read_servers(figures_t *f, sqlite3 *db)
{
    audience_query_t *q = f->q;
    sqlite3_stmt *st = NULL;
    int err = -EIO, rc = SQLITE_DONE;
    if (sqlite3_prepare_v2(db, servers_sql, -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, q->from_ms);
        sqlite3_bind_int64(st, 2, q->to_ms);
        sqlite3_bind_text(st, 3, audience_store_server_name(), -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 4, f->longest_ms);
        err = 0;
        while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
            const char *name = (const char *)sqlite3_column_text(st, 0);
            err = name ? audience_query_add_server(q, name) : -ENOMEM;
        }
        if (!err && rc != SQLITE_DONE)
            err = -EIO;
    }
    sqlite3_finalize(st);
    return err;
}

static int by_end(const void *a, const void *b, void *arg)
{
    const fig_session_t *s = arg;
    int64_t x = s[*(const uint32_t *)a].end_ms, y = s[*(const uint32_t *)b].end_ms;
    return x < y ? -1 : x > y;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The id at each place in byte order (rank inverted; NULL when rank is, or on ENOMEM). */
static uint32_t *ids_in_order(uint32_t *rank, uint32_t n)
{
    uint32_t *id_of = rank ? malloc(((size_t)n + 1) * sizeof(*id_of)) : NULL;
    for (uint32_t id = 0; id_of && id < n; id++)
        id_of[rank[id]] = id;
    return id_of;
}

/* After reading: mounts and countries numbered in byte order, the listening sessions by end,
 * and the per-group arrays. */
static int prepare(figures_t *f)
{
    audience_intern_free(&f->addresses);
    audience_intern_free(&f->agents);
    audience_intern_free(&f->listeners);
    uint32_t *mrank = audience_intern_ranks(&f->mounts);
    uint32_t *crank = audience_intern_ranks(&f->countries);
    f->mount_of = ids_in_order(mrank, f->mounts.n);
    f->country_of = ids_in_order(crank, f->countries.n);
    size_t ngroups = (size_t)f->mounts.n + 1;
    f->by_end = malloc((f->n + 1) * sizeof(*f->by_end));
    f->active = malloc((f->n + 1) * sizeof(*f->active));
    f->near = malloc((f->n + 1) * sizeof(*f->near));
    f->chain_of = malloc((f->n + 1) * sizeof(*f->chain_of));
    f->chain_len = malloc((f->n + 1) * sizeof(*f->chain_len));
    f->touched = malloc(ngroups * sizeof(*f->touched));
    f->cell = calloc(ngroups, sizeof(*f->cell));
    f->on = calloc(ngroups, sizeof(*f->on));
    int err = 0;
    if (!f->mount_of || !f->country_of || !f->by_end || !f->active || !f->near || !f->chain_of ||
        !f->chain_len || !f->touched ||
        !f->cell || !f->on) {
        err = -ENOMEM;
    } else {
        for (size_t i = 0; i < f->n; i++) {
            f->s[i].group = mrank[f->s[i].group] + 1;
            f->s[i].country = crank[f->s[i].country];
        }
        for (size_t i = 0; i < f->n; i++)
            if (f->s[i].end_ms > f->s[i].start_ms)
                f->by_end[f->nby_end++] = (uint32_t)i;
        qsort_r(f->by_end, f->nby_end, sizeof(*f->by_end), by_end, f->s);
    }
    free(mrank);
    free(crank);
    return err;
}

/* The sessions that overlap [from, to): those still on from the bucket before, then those
 * that begin before `to`. */
static void take_sessions(figures_t *f, int64_t from, int64_t to)
{
    size_t kept = 0;
    for (size_t i = 0; i < f->nactive; i++)
        if (f->s[f->active[i]].end_ms > from)
            f->active[kept++] = f->active[i];
    f->nactive = kept;
    for (; f->next < f->n && f->s[f->next].start_ms < to; f->next++)
        if (f->s[f->next].end_ms > from)
            f->active[f->nactive++] = (uint32_t)f->next;
}

static void count_in(fig_cell_t *c, const fig_session_t *s, int64_t from, int64_t to)
{
    /* a chain counts once, by its first session in the bucket */
    int first_here = !s->cont || s->prev_end <= from;
    c->sessions++;
    if (s->qualified) {
        c->qualified += first_here;
        c->listened_ms += (uint64_t)((s->end_ms < to ? s->end_ms : to) -
                                     (s->start_ms > from ? s->start_ms : from));
    }
    c->prerolls += s->preroll && s->start_ms >= from;
    c->in_progress += s->now;
    if (s->chain_ms >= AUDIENCE_WM_MIN_MS) {
        c->active += first_here;
        c->started += !s->cont && s->start_ms >= from;
    }
}

/* AQH of the bucket [from, to): the quarter-hours between a session's first and last count
 * for it; in those two (its edges) a listener's time is summed over its sessions, once per
 * mount and once for the server (audience_quarter_edges). */
static int by_edge(const void *a, const void *b, void *arg)
{
    const fig_edge_t *x = a, *y = b;
    int server = *(const int *)arg;
    if (!server && x->group != y->group)
        return x->group < y->group ? -1 : 1;
    if (x->listener != y->listener)
        return x->listener < y->listener ? -1 : 1;
    return x->quarter < y->quarter ? -1 : x->quarter > y->quarter;
}

static void count_edges(figures_t *f, int server)
{
    if (!f->nedges)
        return;
    qsort_r(f->edges, f->nedges, sizeof(*f->edges), by_edge, &server);
    int64_t sum = 0;
    for (size_t i = 0; i < f->nedges; i++) {
        const fig_edge_t *e = &f->edges[i];
        sum += e->ms;
        const fig_edge_t *n = i + 1 < f->nedges ? &f->edges[i + 1] : NULL;
        if (n && (server || n->group == e->group) && n->listener == e->listener &&
            n->quarter == e->quarter)
            continue;
        f->cell[server ? 0 : e->group].aqh_quarters += sum >= AUDIENCE_AQH_MIN_MS;
        sum = 0;
    }
}

static int quarter_hours(figures_t *f, int64_t from, int64_t to)
{
    f->nedges = 0;
    for (size_t i = 0; i < f->nactive; i++) {
        const fig_session_t *s = &f->s[f->active[i]];
        audience_edges_t q;
        if (s->chain_ms < AUDIENCE_WM_MIN_MS ||
            !audience_quarter_edges(s->start_ms, s->end_ms, from, to, &q))
            continue;
        f->cell[s->group].aqh_quarters += (uint64_t)q.whole;
        f->cell[0].aqh_quarters += (uint64_t)q.whole;
        fig_edge_t *v = audience_intern_room(f->edges, &f->edges_room, f->nedges + 1,
                                             sizeof(*v));
        if (!v)
            return -ENOMEM;
        f->edges = v;
        for (int k = 0; k < q.n; k++)
            f->edges[f->nedges++] = (fig_edge_t){.group = s->group, .listener = s->listener,
                                                 .quarter = q.quarter[k], .ms = q.ms[k]};
    }
    count_edges(f, 0);
    count_edges(f, 1);
    return 0;
}

/* ---- pauses ----
 * With <resume-seconds>, the sessions of a listener key on a mount, by start, form chains: a
 * session that began when every one before it had ended, the last at most resume-seconds
 * before, continues the chain of that last one; any other begins a chain (two at once are two
 * sessions). A chain counts once (by its first session in a bucket), from its first session's
 * start, by its sessions' time together. For each bucket the sessions that overlap it widened by AUDIENCE_CHAIN_MS each side are sorted by key, mount and start, and each is given its chain's length (the time
 * its sessions listened), whether it continues one and where that one ended; as the widening
 * is longer than any pause, a session of the bucket always sees the one it continues. */

static int by_chain(const void *a, const void *b, void *arg)
{
    const fig_session_t *x = &((const fig_session_t *)arg)[*(const uint32_t *)a];
    const fig_session_t *y = &((const fig_session_t *)arg)[*(const uint32_t *)b];
    if (x->listener != y->listener)
        return x->listener < y->listener ? -1 : 1;
    if (x->group != y->group)
        return x->group < y->group ? -1 : 1;
    if (x->start_ms != y->start_ms)
        return x->start_ms < y->start_ms ? -1 : 1;
    return x->end_ms < y->end_ms ? -1 : x->end_ms > y->end_ms;
}

static void chains(figures_t *f, int64_t from, int64_t to)
{
    int64_t lo = from - AUDIENCE_CHAIN_MS, hi = to + AUDIENCE_CHAIN_MS;
    int64_t resume_ms = (int64_t)f->q->resume_s * 1000;
    int64_t qualify_ms = (int64_t)f->q->qualify_s * 1000;
    size_t kept = 0;
    for (size_t i = 0; i < f->nnear; i++)
        if (f->s[f->near[i]].end_ms > lo)
            f->near[kept++] = f->near[i];
    f->nnear = kept;
    for (; f->near_next < f->n && f->s[f->near_next].start_ms < hi; f->near_next++)
        if (f->s[f->near_next].end_ms > lo && f->s[f->near_next].keyed)
            f->near[f->nnear++] = (uint32_t)f->near_next;
    qsort_r(f->near, f->nnear, sizeof(*f->near), by_chain, f->s);
    /* each continues the session of its key and mount that ended last before it when every
     * one before it had ended, at most resume_ms before it began (ties: the later one) */
    int64_t last_end = 0;      /* the latest end of those before it */
    uint32_t latest = 0;       /* which one that was (a place in near) */
    for (uint32_t i = 0; i < f->nnear; i++) {
        fig_session_t *s = &f->s[f->near[i]], *p = i ? &f->s[f->near[i - 1]] : NULL;
        int same = p && p->listener == s->listener && p->group == s->group;
        s->cont = same && s->start_ms >= last_end && s->start_ms - last_end <= resume_ms;
        s->prev_end = s->cont ? last_end : 0;
        f->chain_of[i] = s->cont ? f->chain_of[latest] : i;
        f->chain_len[i] = 0;
        if (!same || s->end_ms >= last_end) {
            last_end = s->end_ms;
            latest = i;
        }
    }
    /* each chain's length, then given to each of its sessions */
    for (uint32_t i = 0; i < f->nnear; i++)
        f->chain_len[f->chain_of[i]] += f->s[f->near[i]].end_ms - f->s[f->near[i]].start_ms;
    for (uint32_t i = 0; i < f->nnear; i++) {
        fig_session_t *s = &f->s[f->near[i]];
        s->chain_ms = f->chain_len[f->chain_of[i]];
        s->qualified = s->chain_ms >= qualify_ms;
    }
}

/* Sorts the bucket's keys (group << 32 | id) for its sessions' mount and the server's:
 * listeners (qualified sessions only) or countries (every session). */
static void bucket_keys(figures_t *f, int listeners)
{
    f->nkeys = 0;
    for (size_t i = 0; i < f->nactive; i++) {
        const fig_session_t *s = &f->s[f->active[i]];
        if (listeners && !s->qualified)
            continue;
        uint64_t id = listeners ? s->listener : s->country;
        f->keys[f->nkeys++] = (uint64_t)s->group << 32 | id;
        f->keys[f->nkeys++] = id;
    }
    if (f->nkeys)
        qsort(f->keys, f->nkeys, sizeof(*f->keys), cmp_u64);
}

/* One start (+1) or end (-1) of a listening session. */
static void sweep_one(figures_t *f, const fig_session_t *s, int d)
{
    f->on[s->group] += d;
    f->on[0] += d;
}

/* The most listening at once in [from, to), of each group with sessions in it. */
static void sweep(figures_t *f, int64_t from, int64_t to)
{
    /* how many listen at `from`: every end and start up to it */
    for (; f->ends_swept < f->nby_end && f->s[f->by_end[f->ends_swept]].end_ms <= from;
         f->ends_swept++)
        sweep_one(f, &f->s[f->by_end[f->ends_swept]], -1);
    for (; f->starts_swept < f->n && f->s[f->starts_swept].start_ms <= from; f->starts_swept++)
        if (f->s[f->starts_swept].end_ms > f->s[f->starts_swept].start_ms)
            sweep_one(f, &f->s[f->starts_swept], +1);
    f->cell[0].peak = f->on[0];
    for (size_t i = 0; i < f->ntouched; i++)
        f->cell[f->touched[i]].peak = f->on[f->touched[i]];
    /* then each time inside it, ends first */
    for (;;) {
        while (f->starts_swept < f->n &&
               f->s[f->starts_swept].end_ms <= f->s[f->starts_swept].start_ms)
            f->starts_swept++;
        const fig_session_t *e = f->ends_swept < f->nby_end ? &f->s[f->by_end[f->ends_swept]]
                                                            : NULL;
        const fig_session_t *b = f->starts_swept < f->n ? &f->s[f->starts_swept] : NULL;
        if (e && e->end_ms < to && (!b || e->end_ms <= b->start_ms)) {
            sweep_one(f, e, -1);
            f->ends_swept++;
        } else if (b && b->start_ms < to) {
            sweep_one(f, b, +1);
            f->starts_swept++;
            fig_cell_t *c = &f->cell[b->group];
            c->peak = f->on[b->group] > c->peak ? f->on[b->group] : c->peak;
            f->cell[0].peak = f->on[0] > f->cell[0].peak ? f->on[0] : f->cell[0].peak;
        } else {
            break;
        }
    }
}

/* Appends group g's row, its countries from the sorted country keys at *key on. */
static int add_row(figures_t *f, uint32_t g, int64_t from, int64_t to, size_t *key)
{
    audience_query_t *q = f->q;
    audience_row_t *rows = audience_intern_room(q->rows, &f->rows_room, q->nrows, sizeof(*rows));
    if (!rows)
        return -ENOMEM;
    q->rows = rows;
    const fig_cell_t *c = &f->cell[g];
    size_t len = 0;
    const char *name = g ? audience_intern_bytes(&f->mounts, f->mount_of[g - 1], &len) : "";
    audience_row_t *r = &q->rows[q->nrows];
    *r = (audience_row_t){
        .mount = strndup(name, len), .from_ms = from, .to_ms = to,
        .sessions = c->sessions, .qualified = c->qualified, .listened_ms = c->listened_ms,
        .cume = c->cume, .peak = c->peak > 0 ? (uint64_t)c->peak : 0,
        .prerolls = c->prerolls, .in_progress = c->in_progress,
        .active = c->active, .started = c->started, .aqh_quarters = c->aqh_quarters,
    };
    if (!r->mount)
        return -ENOMEM;
    q->nrows++;
    while (*key < f->nkeys && f->keys[*key] >> 32 < g)
        (*key)++;
    size_t first = *key, distinct = 0;
    for (; *key < f->nkeys && f->keys[*key] >> 32 == g; (*key)++)
        distinct += *key == first || f->keys[*key] != f->keys[*key - 1];
    if (distinct && !(r->countries = calloc(distinct, sizeof(*r->countries))))
        return -ENOMEM;
    for (size_t i = first; i < *key; i++) {
        if (i == first || f->keys[i] != f->keys[i - 1]) {
            const char *cc = audience_intern_bytes(
                &f->countries, f->country_of[(uint32_t)f->keys[i]], &len);
            snprintf(r->countries[r->ncountries++].cc, sizeof(r->countries->cc), "%.*s",
                     (int)len, cc);
        }
        r->countries[r->ncountries - 1].sessions++;
    }
    return 0;
}

/* The rows of the bucket [from, to): the server's (even when nobody listened), then each
 * mount's in byte order. */
static int bucket(figures_t *f, int64_t from, int64_t to)
{
    take_sessions(f, from, to);
    if (f->q->resume_s)
        chains(f, from, to);
    f->ntouched = 0;
    for (size_t i = 0; i < f->nactive; i++) {
        const fig_session_t *s = &f->s[f->active[i]];
        if (!f->cell[s->group].sessions)
            f->touched[f->ntouched++] = s->group;
        count_in(&f->cell[s->group], s, from, to);
        count_in(&f->cell[0], s, from, to);
    }
    if (quarter_hours(f, from, to) < 0)
        return -ENOMEM;
    if (f->keys_room < 2 * f->nactive) {
        free(f->keys);
        f->keys_room = 2 * f->nactive;
        if (!(f->keys = malloc(f->keys_room * sizeof(*f->keys))))
            return -ENOMEM;
    }
    bucket_keys(f, 1);
    for (size_t i = 0; i < f->nkeys; i++)
        f->cell[f->keys[i] >> 32].cume += i == 0 || f->keys[i] != f->keys[i - 1];
    sweep(f, from, to);
    bucket_keys(f, 0);
    if (f->ntouched)
        qsort(f->touched, f->ntouched, sizeof(*f->touched), cmp_u32);
    size_t key = 0;
    int err = f->q->mount ? 0 : add_row(f, 0, from, to, &key);
    for (size_t i = 0; i < f->ntouched && !err; i++)
        err = add_row(f, f->touched[i], from, to, &key);
    f->cell[0] = (fig_cell_t){0};
    for (size_t i = 0; i < f->ntouched; i++)
        f->cell[f->touched[i]] = (fig_cell_t){0};
    return err;
}

static void figures_free(figures_t *f)
{
    audience_intern_free(&f->mounts);
    audience_intern_free(&f->countries);
    audience_intern_free(&f->addresses);
    audience_intern_free(&f->agents);
    audience_intern_free(&f->listeners);
    free(f->s);
    free(f->mount_of);
    free(f->country_of);
    free(f->by_end);
    free(f->active);
    free(f->near);
    free(f->chain_of);
    free(f->chain_len);
    free(f->keys);
    free(f->edges);
    free(f->touched);
    free(f->cell);
    free(f->on);
}

void audience_sqlite_figures(sqlite3 *db, audience_query_t *q)
{
    q->err = db ? 0 : -ENODEV;
    if (!db)
        return;
    figures_t f = {.q = q};
    q->err = live_snapshot(db, q->qualify_s, q->anonymize) < 0 ? -EIO
                                                                       : read_period(&f, db);
    if (q->err == 0)
        q->err = prepare(&f);
    int64_t from = q->from_ms;
    while (from < q->to_ms && q->err == 0) {
        /* buckets end at whole hours or days (UTC) */
        int64_t to = q->step_ms ? (from / q->step_ms + 1) * q->step_ms : q->to_ms;
        if (to > q->to_ms)
            to = q->to_ms;
        q->err = bucket(&f, from, to);
        from = to;
    }
    if (q->err == 0)
        q->err = read_servers(&f, db);
    figures_free(&f);
    sqlite3_exec(db, "DELETE FROM temp.live", NULL, NULL, NULL);
}
