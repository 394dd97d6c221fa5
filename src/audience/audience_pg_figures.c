/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * audience_pg_figures: the audience figures and top lists of the PostgreSQL store, made by
 * SQL in the database (see audience.h for the definitions, audience_pg.h for the backend).
 *
 * Every bucket (hour, day, or the whole period) is a range [bf, bt); its sessions are those
 * stored or going on (live_sessions, every server's, those still fresh) that overlap it,
 * found three ways that each use an index: those that began in it or in the hour before,
 * those longer than an hour that began earlier and end in it or later (a partial index on
 * end_ms), and those going on. One statement makes every figure of every bucket asked:
 * counts and TLH by grouping sets (the server, each mount), CUME by distinct address and
 * agent, the countries, and the peak by a running count over each bucket's starts (clamped to
 * its start) and ends, ends first at the same time.
 *
 * The cache: the figures of a whole hour or day in the past that no session going on
 * overlaps, or of a period asked as one from a whole hour to a whole hour (kept under its
 * length as the step), are kept in figures_cache, with the bucket's fingerprint (the sum of
 * the versions of its hours: every record written bumps the version of each hour it covers).
 * A later ask for the same bucket, the same <min-session> and servers, whose fingerprint has
 * not moved reads the kept figures instead of making them again; so only the buckets that
 * changed are made, and the figures of a month by day cost about the last day or two.
 */
#include "audience/audience_pg.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audience/audience_store.h"
#include "core/buf.h"
#include "core/log.h"
#include "stream/session.h"

#define FIGURES_MS 120000      /* the figures made within this, or the connection is cut */

/* A record's end in the figures: at most AUDIENCE_SESSION_CAP_MS after its start. */
#define CAPPED_END "least(end_ms, start_ms + " AUDIENCE_SESSION_CAP_SQL ")"

/* The sessions of bucket m (a row of m below) widened by $10 each side (with pauses,
 * AUDIENCE_CHAIN_MS: its sessions' chains) as one relation: $4 a mount or NULL, $5 a server or
 * NULL, $6 the oldest fresh row of a session going on. */
#define BUCKET_SESSIONS                                                                        \
    "SELECT mount, start_ms, " CAPPED_END " AS end_ms, ip, coalesce(user_agent, '') AS ua,"   \
    " coalesce(country, '') AS cc, preroll <> 0 AS preroll, false AS now, listener_key AS k"  \
    " FROM sessions WHERE start_ms >= m.bf - $10::bigint - 3600000"                           \
    " AND start_ms < m.bt + $10::bigint AND " CAPPED_END " > m.bf - $10::bigint"              \
    " AND ($4::text IS NULL OR mount = $4) AND ($5::text IS NULL OR server = $5)"             \
    " AND ($12::boolean OR invalid = '')"                                                      \
    " UNION ALL SELECT mount, start_ms, " CAPPED_END ", ip, coalesce(user_agent, ''),"        \
    " coalesce(country, ''), preroll <> 0, false, listener_key FROM sessions"                 \
    " WHERE end_ms > m.bf - $10::bigint AND start_ms < m.bf - $10::bigint - 3600000"          \
    " AND end_ms - start_ms > 3600000 AND " CAPPED_END " > m.bf - $10::bigint"                \
    " AND ($4::text IS NULL OR mount = $4) AND ($5::text IS NULL OR server = $5)"             \
    " AND ($12::boolean OR invalid = '')"                                                      \
    " UNION ALL SELECT mount, start_ms, " CAPPED_END ", ip, coalesce(user_agent, ''),"        \
    " coalesce(country, ''), preroll <> 0, true, listener_key FROM live_sessions l"           \
    " WHERE l.end_ms >= $6 AND l.start_ms < m.bt + $10::bigint"                               \
    " AND least(l.end_ms, l.start_ms + " AUDIENCE_SESSION_CAP_SQL ") > m.bf - $10::bigint"     \
    " AND ($4::text IS NULL OR mount = $4) AND ($5::text IS NULL OR server = $5)"             \
    " AND ($12::boolean OR invalid = '')"                                                      \
    " AND NOT EXISTS (SELECT 1 FROM sessions x WHERE x.start_ms = l.start_ms"                 \
    " AND x.conn_id = l.conn_id AND x.server = l.server)"

/* Pauses (audience_sqlite_figures.c does the same in C, by following each session to the one
 * it continues): the sessions of a listener key on a mount, by start (rn). One that began when
 * every one before it had ended (le: the last end), at most $11 ms (<resume-seconds>; 0: none)
 * after, continues (pe: that end) the chain of the one that ended last (ties: the later one).
 * PAUSED is every session with rn, le and pe, and whether any of its key's sessions on the
 * mount continues another (cs): most do not, and then each session is a chain of its own.
 * CHAINED follows the chains of the others only: the continuing sessions cut them into
 * segments (sg), the one that ended last in a segment (lr) is what the next segment's first
 * continues; a segment "carries" (ca) when its first continues and ended last in it, so the
 * chain of a continuing session is that of the last segment before it that does not carry
 * (ch: its number; a session that begins a chain and ends last in its segment is that chain;
 * any other alone, -rn). Each gets its chain's length (cl, the time its sessions listened). */
#define PAUSED                                                                                 \
    "SELECT *, bool_or(pe IS NOT NULL) OVER (PARTITION BY b, k, mount) AS cs FROM ("          \
    " SELECT *, CASE WHEN $11::bigint > 0 AND k IS NOT NULL AND start_ms >= le"               \
    "  AND start_ms - le <= $11::bigint THEN le END AS pe FROM ("                             \
    "  SELECT *, max(end_ms) OVER (PARTITION BY b, k, mount ORDER BY rn"                      \
    "   ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS le FROM ("                       \
    "   SELECT *, row_number() OVER (PARTITION BY b, k, mount ORDER BY start_ms, end_ms)"     \
    "    AS rn FROM sw) r) l) c"

#define CHAIN_COLUMNS "b, bf, bt, mount, start_ms, end_ms, ip, ua, cc, preroll, now, k, pe"

#define CHAINED                                                                                \
    "SELECT " CHAIN_COLUMNS ", end_ms - start_ms AS cl FROM pz WHERE NOT cs"                  \
    " UNION ALL SELECT " CHAIN_COLUMNS ","                                                     \
    " sum(end_ms - start_ms) OVER (PARTITION BY b, k, mount, ch) AS cl FROM ("                 \
    " SELECT *, CASE WHEN pe IS NOT NULL THEN max(sg) FILTER (WHERE NOT ca) OVER (PARTITION BY" \
    "   b, k, mount ORDER BY rn ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING)"            \
    "  WHEN lr = rn THEN sg ELSE -rn END AS ch FROM ("                                        \
    "  SELECT *, bool_or(pe IS NOT NULL AND lr = rn) OVER (PARTITION BY b, k, mount, sg) AS ca"\
    "  FROM (SELECT *, first_value(rn) OVER (PARTITION BY b, k, mount, sg"                     \
    "    ORDER BY end_ms DESC, rn DESC) AS lr FROM ("                                         \
    "   SELECT *, count(pe) OVER (PARTITION BY b, k, mount ORDER BY rn) AS sg"                \
    "    FROM pz WHERE cs) g) m) a) h"

/* AQH (audience_quarter_edges, in SQL): each session of a minute or more (wm) cut to the
 * whole clock quarter-hours of the bucket [bf, bt) as [a, e); i1 and i2 the first and last
 * quarter-hour it touches. The ones between count for it (AQH_WHOLE); in i1 and i2 (qe: the
 * quarter-hour and the time in it) a listener's time is summed over its sessions, per mount
 * and for the server, and counts from five minutes (aqs). */
#define AQH_CUT                                                                                \
    "SELECT b, mount, coalesce(k, ip || chr(1) || coalesce(ua, '')) AS lk, a, e,"              \
    "  a / 900000 AS i1, (e - 1) / 900000 AS i2 FROM (SELECT b, mount, k, ip, ua,"              \
    "  greatest(start_ms, (bf + 899999) / 900000 * 900000) AS a,"                             \
    "  least(end_ms, bt / 900000 * 900000) AS e FROM sb WHERE wm) x WHERE e > a"
#define AQH_WHOLE "greatest(i2 - i1 - 1, 0)"

/* $1, $2: the buckets' starts and ends; $3 the qualifying length (ms); $7 the cache's scope
 * ('' every server); $8 the step; $9 each bucket's fingerprint, NULL when it is not kept; $10
 * the widening, $11 the longest pause (BUCKET_SESSIONS, CHAINED). */
static const char figures_sql[] =
    "WITH m AS (SELECT * FROM unnest($1::bigint[], $2::bigint[], $9::numeric[])"
    "  WITH ORDINALITY AS m(bf, bt, fp, b)),"
    " sw AS (SELECT m.b, m.bf, m.bt, s.* FROM m, LATERAL (" BUCKET_SESSIONS ") s),"
    " pz AS MATERIALIZED (" PAUSED "),"
    " sb AS MATERIALIZED (SELECT c.*, cl >= $3 AS qual, cl >= 60000 AS wm,"
    "  pe IS NULL OR pe <= bf AS first_here FROM (" CHAINED ") c"
    "  WHERE start_ms < bt AND end_ms > bf),"
    " agg AS (SELECT b, mount, count(*) AS sessions,"
    "  count(*) FILTER (WHERE qual AND first_here) AS qualified,"
    "  coalesce(sum(least(end_ms, bt) - greatest(start_ms, bf)) FILTER (WHERE qual), 0)"
    "   AS listened,"
    "  count(*) FILTER (WHERE preroll AND start_ms >= bf) AS prerolls,"
    "  count(*) FILTER (WHERE now) AS in_progress,"
    "  count(*) FILTER (WHERE wm AND first_here) AS active,"
    "  count(*) FILTER (WHERE wm AND pe IS NULL AND start_ms >= bf) AS started"
    "  FROM sb GROUP BY GROUPING SETS ((b), (b, mount))),"
    " qc AS MATERIALIZED (" AQH_CUT "),"
    " qe AS (SELECT b, mount, lk, i1 AS q, least(e, (i1 + 1) * 900000) - a AS ms FROM qc"
    "  UNION ALL SELECT b, mount, lk, i2, e - i2 * 900000 FROM qc WHERE i2 > i1),"
    " aqs AS (SELECT b, mount, sum(n) AS n FROM ("
    "  SELECT b, mount, sum(" AQH_WHOLE ") AS n FROM qc GROUP BY GROUPING SETS ((b), (b, mount))"
    "  UNION ALL SELECT b, mount, count(*) FROM (SELECT b, mount FROM qe GROUP BY b, mount, lk, q"
    "   HAVING sum(ms) >= 300000) y GROUP BY b, mount"
    "  UNION ALL SELECT b, NULL, count(*) FROM (SELECT b FROM qe GROUP BY b, lk, q"
    "   HAVING sum(ms) >= 300000) z GROUP BY b) w GROUP BY b, mount),"
    " lm AS (SELECT b, mount, k, CASE WHEN k IS NULL THEN ip END AS ip,"
    "  CASE WHEN k IS NULL THEN ua END AS ua FROM sb WHERE qual GROUP BY 1, 2, 3, 4, 5),"
    " cume AS (SELECT b, mount, count(*) AS n FROM lm GROUP BY b, mount"
    "  UNION ALL SELECT b, NULL, count(*) FROM (SELECT DISTINCT b, k, ip, ua FROM lm) x"
    "  GROUP BY b),"
    " cc AS (SELECT b, mount, cc, count(*) AS n FROM sb"
    "  GROUP BY GROUPING SETS ((b, cc), (b, mount, cc))),"
    " ccs AS (SELECT b, mount, string_agg(cc || '=' || n, ';' ORDER BY cc) AS countries"
    "  FROM cc GROUP BY b, mount),"
    " ev AS (SELECT b, mount, greatest(start_ms, bf) AS t, 1 AS k, 1 AS d FROM sb"
    "  WHERE end_ms > start_ms"
    "  UNION ALL SELECT b, mount, end_ms, 0, -1 FROM sb WHERE end_ms > start_ms AND end_ms < bt),"
    " run AS (SELECT b, mount, k,"
    "  sum(d) OVER (PARTITION BY b, mount ORDER BY t, k ROWS UNBOUNDED PRECEDING) AS on_m,"
    "  sum(d) OVER (PARTITION BY b ORDER BY t, k ROWS UNBOUNDED PRECEDING) AS on_all FROM ev),"
    " pk AS (SELECT b, mount, max(on_m) AS peak FROM run WHERE k = 1 GROUP BY b, mount"
    "  UNION ALL SELECT b, NULL, max(on_all) FROM run WHERE k = 1 GROUP BY b),"
    " res AS (SELECT m.b, m.bf, m.fp, a.mount, coalesce(a.sessions, 0) AS sessions,"
    "  coalesce(a.qualified, 0) AS qualified, coalesce(a.listened, 0) AS listened,"
    "  coalesce(a.prerolls, 0) AS prerolls, coalesce(a.in_progress, 0) AS in_progress,"
    "  coalesce(c.n, 0) AS cume, coalesce(p.peak, 0) AS peak, coalesce(a.active, 0) AS active,"
    "  coalesce(a.started, 0) AS started, coalesce(q.n, 0) AS aqh,"
    "  coalesce(x.countries, '') AS countries"
    "  FROM m LEFT JOIN agg a ON a.b = m.b"
    "  LEFT JOIN cume c ON c.b = a.b AND c.mount IS NOT DISTINCT FROM a.mount"
    "  LEFT JOIN pk p ON p.b = a.b AND p.mount IS NOT DISTINCT FROM a.mount"
    "  LEFT JOIN ccs x ON x.b = a.b AND x.mount IS NOT DISTINCT FROM a.mount"
    "  LEFT JOIN aqs q ON q.b = a.b AND q.mount IS NOT DISTINCT FROM a.mount),"
    " kept AS (INSERT INTO figures_cache (scope, qualify_ms, step_ms, bucket_ms, fingerprint,"
    "  mount, sessions, qualified, listened_ms, prerolls, cume, peak, countries, active,"
    "  started, aqh_quarters)"
    "  SELECT $7, $3, $8, bf, fp, coalesce(mount, ''), sessions, qualified, listened, prerolls,"
    "  cume, peak, countries, active, started, aqh FROM res WHERE fp IS NOT NULL AND in_progress = 0"
    "  AND $4::text IS NULL"
    "  ON CONFLICT DO NOTHING)"
    " SELECT b, mount, sessions, qualified, listened, prerolls, in_progress, cume, peak,"
    "  countries, active, started, aqh FROM res ORDER BY b, mount NULLS FIRST";

/* Each bucket's fingerprint (the hours it is widened over included), and the start of the
 * oldest session going on (of the servers asked for) that the figures count. $1, $2 the
 * buckets, $3 the oldest fresh row, $4 a server or NULL, $5 the widening. */
static const char state_sql[] =
    "SELECT (SELECT coalesce(sum(version), 0) FROM session_hours"
    "  WHERE hour >= (m.bf - $5::bigint) / 3600000"
    "  AND hour < (m.bt + $5::bigint + 3599999) / 3600000)::text,"
    " (SELECT min(start_ms) FROM live_sessions WHERE end_ms >= $3"
    "  AND ($4::text IS NULL OR server = $4))"
    " FROM unnest($1::bigint[], $2::bigint[]) WITH ORDINALITY AS m(bf, bt, b) ORDER BY b";

/* The kept figures of the buckets starting at $4 with fingerprints $5 (scope $1, qualifying
 * length $2, step $3), each bucket's server row first ('' mount). */
static const char cached_sql[] =
    "SELECT c.bucket_ms, c.mount, c.sessions, c.qualified, c.listened_ms, c.prerolls, 0,"
    " c.cume, c.peak, c.countries, c.active, c.started, c.aqh_quarters FROM figures_cache c"
    " JOIN unnest($4::bigint[], $5::numeric[]) AS w(bucket_ms, fp)"
    " ON c.bucket_ms = w.bucket_ms AND c.fingerprint = w.fp"
    " WHERE c.scope = $1 AND c.qualify_ms = $2 AND c.step_ms = $3 AND c.active IS NOT NULL"
    " ORDER BY c.bucket_ms, c.mount";

static const char forget_sql[] =
    "DELETE FROM figures_cache WHERE scope = $1 AND qualify_ms = $2 AND step_ms = $3"
    " AND bucket_ms = ANY($4::bigint[])";

/* One bucket as the figures go. */
typedef struct bucket {
    int64_t from, to;
    char fp[48];               /* its fingerprint ("" until known) */
    int keep;                  /* its figures may be kept (and read back) */
    int cached;                /* its rows came from the cache (set while reading them) */
} bucket_t;

typedef struct figures {
    audience_db_t *db;
    audience_query_t *q;
    bucket_t *b;
    size_t nb, made;           /* buckets, and those made now (not read from the cache) */
    /* each bucket's rows, from the cache or made now, in order */
    audience_row_t **rows;
    size_t *nrows;
} figures_t;

/* An array literal of the buckets' starts, ends or fingerprints ({1,2,NULL}); only those
 * with pick (or all with pick NULL). */
static char *array_of(const figures_t *f, int what, int (*pick)(const bucket_t *b))
{
    buf_t a = BUF_INIT;
    buf_append_char(&a, '{');
    int first = 1;
    for (size_t i = 0; i < f->nb; i++) {
        const bucket_t *b = &f->b[i];
        if (pick && !pick(b))
            continue;
        buf_append_str(&a, first ? "" : ",");
        first = 0;
        if (what == 0)
            buf_appendf(&a, "%lld", (long long)b->from);
        else if (what == 1)
            buf_appendf(&a, "%lld", (long long)b->to);
        else
            buf_append_str(&a, b->keep && b->fp[0] ? b->fp : "NULL");
    }
    buf_append_char(&a, '}');
    size_t len;
    return buf_take(&a, &len);
}

/* Parses "DE=3;FR=1;=2" into r's countries. */
static int parse_countries(audience_row_t *r, const char *text)
{
    size_t n = *text ? 1 : 0;
    for (const char *p = text; *p; p++)
        n += *p == ';';
    if (!n)
        return 0;
    if (!(r->countries = calloc(n, sizeof(*r->countries))))
        return -ENOMEM;
    for (const char *p = text; *p && r->ncountries < n;) {
        size_t len = strcspn(p, ";");
        const char *eq = memchr(p, '=', len);
        if (eq) {
            audience_country_t *c = &r->countries[r->ncountries++];
            snprintf(c->cc, sizeof(c->cc), "%.*s", (int)(eq - p), p);
            c->sessions = strtoull(eq + 1, NULL, 10);
        }
        p += len + (p[len] == ';');
    }
    return 0;
}

/* The row of result line i of res (columns: bucket, mount, sessions, qualified, listened,
 * prerolls, in_progress, cume, peak, countries, active, started, aqh) into r, for bucket b. */
static int fill_row(audience_row_t *r, const PGresult *res, int i, const bucket_t *b)
{
    const char *mount = PQgetisnull(res, i, 1) ? "" : PQgetvalue(res, i, 1);
    *r = (audience_row_t){
        .mount = strdup(mount), .from_ms = b->from, .to_ms = b->to,
        .sessions = strtoull(PQgetvalue(res, i, 2), NULL, 10),
        .qualified = strtoull(PQgetvalue(res, i, 3), NULL, 10),
        .listened_ms = strtoull(PQgetvalue(res, i, 4), NULL, 10),
        .prerolls = strtoull(PQgetvalue(res, i, 5), NULL, 10),
        .in_progress = strtoull(PQgetvalue(res, i, 6), NULL, 10),
        .cume = strtoull(PQgetvalue(res, i, 7), NULL, 10),
        .peak = strtoull(PQgetvalue(res, i, 8), NULL, 10),
        .active = strtoull(PQgetvalue(res, i, 10), NULL, 10),
        .started = strtoull(PQgetvalue(res, i, 11), NULL, 10),
        .aqh_quarters = strtoull(PQgetvalue(res, i, 12), NULL, 10),
    };
    return r->mount && parse_countries(r, PQgetvalue(res, i, 9)) == 0 ? 0 : -ENOMEM;
}

/* Adds line i of res to bucket k's rows (a mount filter keeps its mount's row only). */
static int add_line(figures_t *f, size_t k, const PGresult *res, int i)
{
    const char *mount = PQgetisnull(res, i, 1) ? "" : PQgetvalue(res, i, 1);
    if (f->q->mount && strcmp(mount, f->q->mount) != 0)
        return 0;
    audience_row_t *v = realloc(f->rows[k], (f->nrows[k] + 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    f->rows[k] = v;
    int err = fill_row(&v[f->nrows[k]], res, i, &f->b[k]);
    f->nrows[k]++;
    return err;
}

static int pick_keep(const bucket_t *b)
{
    return b->keep;
}

static int pick_todo(const bucket_t *b)
{
    return !b->cached;
}

static int pick_forget(const bucket_t *b)
{
    return b->keep && !b->cached;
}

/* The buckets of the period: whole hours or days (UTC), the first and last cut at from and
 * to; or the period as one. */
static int make_buckets(figures_t *f)
{
    const audience_query_t *q = f->q;
    size_t n = 0;
    for (int64_t at = q->from_ms; at < q->to_ms; n++)
        at = q->step_ms ? (at / q->step_ms + 1) * q->step_ms : q->to_ms;
    if (!(f->b = calloc(n, sizeof(*f->b))) || !(f->rows = calloc(n, sizeof(*f->rows))) ||
        !(f->nrows = calloc(n, sizeof(*f->nrows))))
        return -ENOMEM;
    int64_t at = q->from_ms;
    for (size_t i = 0; i < n; i++) {
        int64_t to = q->step_ms ? (at / q->step_ms + 1) * q->step_ms : q->to_ms;
        f->b[i].from = at;
        f->b[i].to = to < q->to_ms ? to : q->to_ms;
        at = f->b[i].to;
    }
    f->nb = n;
    return 0;
}

/* The fingerprints, and which buckets may be kept: whole ones, in the past, that no session
 * going on overlaps. */
static int read_state(figures_t *f, const char *scope_server, const char *fresh)
{
    char *bf = array_of(f, 0, NULL), *bt = array_of(f, 1, NULL);
    char widen[24];
    snprintf(widen, sizeof(widen), "%d", f->q->resume_s ? AUDIENCE_CHAIN_MS : 0);
    const char *params[] = {bf, bt, fresh, scope_server, widen};
    PGresult *r = bf && bt ? audience_pg_run(f->db, state_sql, 5, params, FIGURES_MS) : NULL;
    free(bf);
    free(bt);
    if (!r || PQntuples(r) != (int)f->nb) {
        PQclear(r);
        return -EIO;
    }
    int64_t now = session_now_ms(), step = f->q->step_ms;
    for (size_t i = 0; i < f->nb; i++) {
        bucket_t *b = &f->b[i];
        int64_t live = PQgetisnull(r, (int)i, 1) ? INT64_MAX
                                                 : strtoll(PQgetvalue(r, (int)i, 1), NULL, 10);
        snprintf(b->fp, sizeof(b->fp), "%s", PQgetvalue(r, (int)i, 0));
        /* an hour or a day whole; a period asked as one that begins and ends on whole hours */
        int whole = step ? b->from % step == 0 && b->to - b->from == step
                         : b->from % AUDIENCE_PG_HOUR_MS == 0 && b->to % AUDIENCE_PG_HOUR_MS == 0;
        b->keep = whole && b->to <= now && b->to <= live;
    }
    PQclear(r);
    return 0;
}

/* The kept figures of the buckets that may be kept, those found marked cached. */
static int read_cached(figures_t *f, const char *scope, const char *qualify, const char *step)
{
    char *starts = array_of(f, 0, pick_keep), *fps = array_of(f, 2, pick_keep);
    const char *params[] = {scope, qualify, step, starts, fps};
    PGresult *r = starts && fps ? audience_pg_run(f->db, cached_sql, 5, params, FIGURES_MS)
                                : NULL;
    free(starts);
    free(fps);
    if (!r)
        return -EIO;
    int err = 0;
    size_t k = 0;
    for (int i = 0; i < PQntuples(r) && !err; i++) {
        int64_t at = strtoll(PQgetvalue(r, i, 0), NULL, 10);
        while (k < f->nb && f->b[k].from < at)
            k++;
        if (k == f->nb || f->b[k].from != at)
            continue;
        /* a bucket is kept whole, its server row first: without it, it is made again */
        if (!f->b[k].cached && strcmp(PQgetvalue(r, i, 1), "") != 0)
            continue;
        f->b[k].cached = 1;
        err = add_line(f, k, r, i);
    }
    PQclear(r);
    return err;
}

/* Makes the figures of the buckets not read from the cache (keeping those that may be). */
static int make_rest(figures_t *f, const char *scope, const char *qualify, const char *step,
                     const char *fresh)
{
    const audience_query_t *q = f->q;
    size_t todo = 0;
    for (size_t i = 0; i < f->nb; i++)
        todo += !f->b[i].cached;
    f->made = todo;
    if (!todo)
        return 0;
    char *forget = array_of(f, 0, pick_forget);
    const char *fparams[] = {scope, qualify, step, forget};
    PGresult *r = forget && !q->mount
                      ? audience_pg_run(f->db, forget_sql, 4, fparams, FIGURES_MS)
                      : NULL;
    PQclear(r);
    free(forget);
    char *bf = array_of(f, 0, pick_todo), *bt = array_of(f, 1, pick_todo);
    /* the fingerprints of the buckets made now, in the same order */
    buf_t fp = BUF_INIT;
    buf_append_char(&fp, '{');
    for (size_t i = 0, first = 1; i < f->nb; i++)
        if (!f->b[i].cached) {
            buf_appendf(&fp, "%s%s", first ? "" : ",", f->b[i].keep ? f->b[i].fp : "NULL");
            first = 0;
        }
    buf_append_char(&fp, '}');
    size_t len;
    char *fps = buf_take(&fp, &len);
    char widen[24], resume[24];
    snprintf(widen, sizeof(widen), "%d", q->resume_s ? AUDIENCE_CHAIN_MS : 0);
    snprintf(resume, sizeof(resume), "%lld", (long long)q->resume_s * 1000);
    const char *params[] = {bf,    bt,   qualify, q->mount, q->server, fresh,
                            scope, step, fps,     widen,    resume,   q->gross ? "t" : "f"};
    r = bf && bt && fps ? audience_pg_run(f->db, figures_sql, 12, params, FIGURES_MS) : NULL;
    free(bf);
    free(bt);
    free(fps);
    if (!r)
        return -EIO;
    /* the answer numbers the buckets made now 1, 2 ...: which bucket each is */
    size_t *which = malloc(todo * sizeof(*which)), n = 0;
    for (size_t i = 0; which && i < f->nb; i++)
        if (!f->b[i].cached)
            which[n++] = i;
    int err = which ? 0 : -ENOMEM;
    for (int i = 0; i < PQntuples(r) && !err; i++) {
        size_t b = strtoull(PQgetvalue(r, i, 0), NULL, 10);
        if (b >= 1 && b <= todo)
            err = add_line(f, which[b - 1], r, i);
    }
    free(which);
    PQclear(r);
    return err;
}

/* Moves every bucket's rows into q, in order. */
static int gather(figures_t *f)
{
    size_t n = 0;
    for (size_t i = 0; i < f->nb; i++)
        n += f->nrows[i];
    audience_query_t *q = f->q;
    if (n && !(q->rows = calloc(n, sizeof(*q->rows))))
        return -ENOMEM;
    for (size_t i = 0; i < f->nb; i++) {
        if (f->nrows[i])
            memcpy(q->rows + q->nrows, f->rows[i], f->nrows[i] * sizeof(*q->rows));
        q->nrows += f->nrows[i];
        free(f->rows[i]);
        f->rows[i] = NULL;
        f->nrows[i] = 0;
    }
    return 0;
}

static void figures_free(figures_t *f)
{
    for (size_t i = 0; f->rows && i < f->nb; i++) {
        for (size_t k = 0; k < f->nrows[i]; k++) {
            free(f->rows[i][k].mount);
            free(f->rows[i][k].countries);
        }
        free(f->rows[i]);
    }
    free(f->rows);
    free(f->nrows);
    free(f->b);
}

/* ---- the servers of the period ---- */

/* The servers with sessions in each bucket ($1, $2: the starts and ends of those not
 * remembered), found as for a bucket, and (bucket 0) those with sessions going on in the
 * period [$4, $5) (rows fresher than $3). */
static const char servers_sql[] =
    "SELECT m.b, s.server FROM unnest($1::bigint[], $2::bigint[]) WITH ORDINALITY AS m(bf, bt, b),"
    " LATERAL (SELECT server FROM sessions WHERE start_ms >= m.bf - 3600000"
    "  AND start_ms < m.bt AND " CAPPED_END " > m.bf"
    "  UNION SELECT server FROM sessions WHERE end_ms > m.bf AND start_ms < m.bf - 3600000"
    "  AND end_ms - start_ms > 3600000 AND " CAPPED_END " > m.bf) s"
    " UNION ALL SELECT DISTINCT 0, server FROM live_sessions WHERE end_ms >= $3"
    "  AND start_ms < $5 AND " CAPPED_END " > $4";

static void memo_clear(audience_pg_memo_t *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->names[i]);
    free(m->names);
    *m = (audience_pg_memo_t){0};
}

void audience_pg_memo_free(audience_pg_t *p)
{
    for (size_t i = 0; i < p->nmemo; i++)
        memo_clear(&p->memo[i]);
    free(p->memo);
    p->memo = NULL;
    p->nmemo = 0;
}

static int memo_add(audience_pg_memo_t *m, const char *name)
{
    char **v = realloc(m->names, (m->n + 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    m->names = v;
    return (v[m->n] = strdup(name)) ? (m->n++, 0) : -ENOMEM;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* q->servers: the union of every bucket's (a kept bucket's remembered from an earlier ask of
 * the same bucket and fingerprint: its hours unchanged, its servers too) and those going on,
 * in byte order. What is remembered becomes the kept buckets of this ask. v[nb] (bucket nb:
 * those going on) is filled here. */
static int servers_of(figures_t *f, const char *fresh, audience_pg_memo_t *v)
{
    audience_pg_t *p = f->db->impl;
    buf_t bf = BUF_INIT, bt = BUF_INIT;
    size_t todo = 0;
    buf_append_char(&bf, '{');
    buf_append_char(&bt, '{');
    for (size_t i = 0; i < f->nb; i++) {
        const bucket_t *b = &f->b[i];
        v[i] = (audience_pg_memo_t){.from = b->from, .to = b->to};
        snprintf(v[i].fp, sizeof(v[i].fp), "%s", b->keep ? b->fp : "");
        for (size_t k = 0; b->keep && b->fp[0] && k < p->nmemo; k++) {
            audience_pg_memo_t *m = &p->memo[k];
            if (m->from == b->from && m->to == b->to && strcmp(m->fp, b->fp) == 0 && m->fp[0]) {
                v[i] = *m; /* taken */
                *m = (audience_pg_memo_t){0};
                v[i].known = 1;
                break;
            }
        }
        if (v[i].known)
            continue;
        buf_appendf(&bf, "%s%lld", todo ? "," : "", (long long)b->from);
        buf_appendf(&bt, "%s%lld", todo ? "," : "", (long long)b->to);
        v[i].todo = ++todo;
    }
    buf_append_char(&bf, '}');
    buf_append_char(&bt, '}');
    size_t len;
    char *starts = buf_take(&bf, &len), *ends = buf_take(&bt, &len);
    char from[24], to[24];
    snprintf(from, sizeof(from), "%lld", (long long)f->q->from_ms);
    snprintf(to, sizeof(to), "%lld", (long long)f->q->to_ms);
    const char *params[] = {starts, ends, fresh, from, to};
    PGresult *r = starts && ends ? audience_pg_run(f->db, servers_sql, 5, params, FIGURES_MS)
                                 : NULL;
    free(starts);
    free(ends);
    if (!r)
        return -EIO;
    int err = 0;
    for (int i = 0; i < PQntuples(r) && !err; i++) {
        size_t b = strtoull(PQgetvalue(r, i, 0), NULL, 10);
        for (size_t k = 0; k <= f->nb && !err; k++) /* the bucket answered as b */
            if ((k == f->nb && b == 0) || (k < f->nb && b && v[k].todo == b))
                err = memo_add(&v[k], PQgetvalue(r, i, 1));
    }
    PQclear(r);
    /* the answer: every name once, in byte order */
    size_t n = 0;
    for (size_t i = 0; i <= f->nb; i++)
        n += v[i].n;
    char **all = n ? malloc(n * sizeof(*all)) : NULL;
    if (n && !all)
        err = -ENOMEM;
    for (size_t i = 0, k = 0; !err && i <= f->nb; i++)
        for (size_t j = 0; j < v[i].n; j++)
            all[k++] = v[i].names[j];
    if (!err && n)
        qsort(all, n, sizeof(*all), by_name);
    for (size_t i = 0; !err && i < n; i++)
        if (i == 0 || strcmp(all[i], all[i - 1]) != 0)
            err = audience_query_add_server(f->q, all[i]);
    free(all);
    /* remembered from now on: this ask's kept buckets */
    audience_pg_memo_free(p);
    size_t kept = 0;
    for (size_t i = 0; i < f->nb; i++)
        kept += v[i].fp[0] != 0;
    if (!err && kept && (p->memo = calloc(kept, sizeof(*p->memo))))
        for (size_t i = 0; i < f->nb; i++)
            if (v[i].fp[0]) {
                p->memo[p->nmemo] = v[i];
                p->memo[p->nmemo].known = p->memo[p->nmemo].todo = 0;
                p->nmemo++;
                v[i] = (audience_pg_memo_t){0};
            }
    return err;
}

/* servers_of with the lists it fills freed after. */
static int read_servers(figures_t *f, const char *fresh)
{
    audience_pg_memo_t *v = calloc(f->nb + 1, sizeof(*v));
    int err = v ? servers_of(f, fresh, v) : -ENOMEM;
    for (size_t i = 0; v && i <= f->nb; i++)
        memo_clear(&v[i]);
    free(v);
    return err;
}

int audience_pg_make_figures(audience_db_t *db, audience_query_t *q, int servers)
{
    audience_pg_t *p = db->impl;
    if (!p->conn) {
        q->err = -EAGAIN;
        return 0;
    }
    figures_t f = {.db = db, .q = q};
    char qualify[24], step[24], fresh[24];
    snprintf(qualify, sizeof(qualify), "%lld", (long long)q->qualify_s * 1000);
    /* a period asked as one is kept under its length: that of a whole hour or day is the
     * same bucket with the same figures as the hour's or the day's */
    snprintf(step, sizeof(step), "%lld",
             (long long)(q->step_ms ? q->step_ms : q->to_ms - q->from_ms));
    snprintf(fresh, sizeof(fresh), "%lld",
             (long long)(session_now_ms() - AUDIENCE_PG_LIVE_STALE_MS));
    /* the figures kept follow the servers asked for, the pauses and the traffic: "r180|edge-1",
     * "gr180|edge-1" (gross; net's scope is the one kept before invalid traffic was told
     * apart, when every session was a valid one) */
    const char *server = q->server ? q->server : "";
    size_t cap = strlen(server) + 24;
    char *scope = malloc(cap);
    if (!scope) {
        q->err = -ENOMEM;
        return 0;
    }
    if (q->resume_s || q->gross)
        snprintf(scope, cap, "%sr%d|%s", q->gross ? "g" : "", q->resume_s, server);
    else
        snprintf(scope, cap, "%s", server);
    PGresult *r = audience_pg_run(db, "BEGIN; SET LOCAL work_mem = '256MB'; SET LOCAL jit = off",
                                  0, NULL, FIGURES_MS);
    PQclear(r);
    int err = !r ? -EIO : make_buckets(&f);
    err = err ? err : read_state(&f, q->server, fresh);
    err = err ? err : read_cached(&f, scope, qualify, step);
    err = err ? err : make_rest(&f, scope, qualify, step, fresh);
    err = err ? err : gather(&f);
    err = err || !servers ? err : read_servers(&f, fresh);
    if (p->conn)
        PQclear(audience_pg_run(db, err ? "ROLLBACK" : "COMMIT", 0, NULL, FIGURES_MS));
    if (err) {
        static log_ratelimit_t rl;
        log_warn_limited(&rl, 60000, "audience store: the figures failed in %s: %s", db->shown,
                         err == -ENOMEM ? "out of memory" : p->err.why);
        for (size_t i = 0; i < q->nrows; i++) {
            free(q->rows[i].mount);
            free(q->rows[i].countries);
        }
        free(q->rows);
        q->rows = NULL;
        q->nrows = 0;
    }
    q->err = err == -EIO && !p->conn ? -EAGAIN : err;
    figures_free(&f);
    free(scope);
    return err ? 0 : (int)f.made;
}

void audience_pg_figures(audience_db_t *db, audience_query_t *q)
{
    audience_pg_t *p = db->impl;
    if (p->conn) /* this server's sessions going on as they are now: they count too */
        audience_pg_publish_live(db, q->qualify_s, q->anonymize);
    audience_pg_make_figures(db, q, 1);
}

/* ---- top lists ---- */

/* $1, $2 the period; $3 the qualifying length; $4 a mount or NULL; $5 by referrer; $6 the
 * limit; $7 a server or NULL; $8 true for every session (gross), false for the valid ones. The sessions found as for a bucket (BUCKET_SESSIONS, stored
 * ones only). */
static const char top_sql[] =
    "SELECT k, count(*), count(*) FILTER (WHERE end_ms - start_ms >= $3),"
    " coalesce(sum(least(end_ms, $2) - greatest(start_ms, $1))"
    "  FILTER (WHERE end_ms - start_ms >= $3), 0),"
    " sum(count(*)) OVER ()"
    " FROM (SELECT CASE WHEN $5 THEN referer ELSE user_agent END AS k, start_ms,"
    "  " CAPPED_END " AS end_ms FROM sessions WHERE start_ms >= $1::bigint - 3600000"
    "  AND start_ms < $2 AND " CAPPED_END " > $1"
    "  AND ($4::text IS NULL OR mount = $4) AND ($7::text IS NULL OR server = $7)"
    "  AND ($8::boolean OR invalid = '')"
    "  UNION ALL SELECT CASE WHEN $5 THEN referer ELSE user_agent END, start_ms, " CAPPED_END
    "  FROM sessions WHERE end_ms > $1 AND start_ms < $1::bigint - 3600000"
    "  AND end_ms - start_ms > 3600000 AND " CAPPED_END " > $1"
    "  AND ($4::text IS NULL OR mount = $4) AND ($7::text IS NULL OR server = $7)"
    "  AND ($8::boolean OR invalid = '')) s"
    " GROUP BY k ORDER BY count(*) DESC, k NULLS FIRST LIMIT $6";

void audience_pg_top(audience_db_t *db, audience_top_t *t)
{
    audience_pg_t *p = db->impl;
    if (!p->conn) {
        t->err = -EAGAIN;
        return;
    }
    char from[24], to[24], qualify[24], limit[16];
    snprintf(from, sizeof(from), "%lld", (long long)t->from_ms);
    snprintf(to, sizeof(to), "%lld", (long long)t->to_ms);
    snprintf(qualify, sizeof(qualify), "%lld", (long long)t->qualify_s * 1000);
    snprintf(limit, sizeof(limit), "%d", t->limit);
    const char *params[] = {from, to, qualify, t->mount, t->by_referer ? "true" : "false",
                            limit, t->server, t->gross ? "t" : "f"};
    PGresult *r = audience_pg_run(db, top_sql, 8, params, FIGURES_MS);
    if (!r) {
        t->err = p->conn ? -EIO : -EAGAIN;
        return;
    }
    int n = PQntuples(r);
    t->err = 0;
    if (n && !(t->entries = calloc((size_t)n, sizeof(*t->entries))))
        t->err = -ENOMEM;
    for (int i = 0; i < n && !t->err; i++) {
        audience_top_entry_t *e = &t->entries[t->n++];
        e->name = PQgetisnull(r, i, 0) ? NULL : strdup(PQgetvalue(r, i, 0));
        e->sessions = strtoull(PQgetvalue(r, i, 1), NULL, 10);
        e->qualified = strtoull(PQgetvalue(r, i, 2), NULL, 10);
        e->listened_ms = strtoull(PQgetvalue(r, i, 3), NULL, 10);
        t->sessions = strtoull(PQgetvalue(r, i, 4), NULL, 10);
        if (!PQgetisnull(r, i, 0) && !e->name)
            t->err = -ENOMEM;
    }
    PQclear(r);
}
