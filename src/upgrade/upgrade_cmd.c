/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * upgrade_cmd: `rimecast --upgrade`. Reads the config for where the server keeps its pidfile,
 * its error log and its port; finds the main process (pidfile, or systemd), checks that it is
 * a rimecast that handles SIGUSR2, sends it, then follows the error log from where it ended
 * for the old process's one line about the hand-over, and checks that the new process is named
 * where the old one was and answers HTTP. Blocking calls and short sleeps: a command, not the
 * daemon.
 */
#include "upgrade/upgrade_cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "conf/config.h"
#include "upgrade/upgrade.h"

#define HANDED_OVER "upgrade: handed over to PID "
#define FAILED "upgrade: failed: "
#define SYSTEMD_UNIT "rimecast.service"

typedef struct upgrade {
    const char *config_file;
    config_t *cfg;
    pid_t old_pid, new_pid;
    int from_systemd; /* the main PID came from systemd: it must name the new one too */
    char *errlog;     /* the error log's path; NULL when it is stderr (not followed) */
    off_t log_offset; /* where the log ended when SIGUSR2 was sent, then what was read */
    char failed_line[1024];
    struct timespec start;   /* when SIGUSR2 was sent */
    double handed_over_s;    /* from then to the old process's line */
} upgrade_t;

static double seconds_since(const struct timespec *t0)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) / 1e9;
}

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* A process exists (one we may not signal exists too). */
static int pid_alive(pid_t pid)
{
    return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

/* The PID a pidfile names: > 0, or -errno (-EINVAL when it holds no PID). */
static pid_t read_pidfile(const char *path)
{
    char line[32] = "";
    FILE *f = fopen(path, "re");
    if (!f)
        return -errno;
    int ok = fgets(line, sizeof(line), f) != NULL;
    fclose(f);
    char *end;
    long v = ok ? strtol(line, &end, 10) : 0;
    return ok && v > 0 && v < 1L << 30 && (*end == '\n' || *end == '\0') ? (pid_t)v : -EINVAL;
}

/* The main PID systemd has for rimecast.service: > 0, 0 when it is not running or systemd is
 * not the service manager here. */
static pid_t systemd_main_pid(void)
{
    if (access("/run/systemd/system", F_OK) < 0)
        return 0;
    FILE *p = popen("systemctl show -p MainPID --value " SYSTEMD_UNIT " 2>/dev/null", "re");
    if (!p)
        return 0;
    char line[32] = "";
    if (!fgets(line, sizeof(line), p))
        line[0] = '\0';
    pclose(p);
    long v = strtol(line, NULL, 10);
    return v > 0 ? (pid_t)v : 0;
}

/* 1 when pid runs a binary whose name starts with "rimecast" (a replaced binary reads
 * "rimecast (deleted)"), so that a stale pidfile naming a reused PID is not signalled. */
static int is_rimecast(pid_t pid, char *exe, size_t cap)
{
    char link[64];
    snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(link, exe, cap - 1);
    if (n < 0) {
        snprintf(exe, cap, "unknown: %s", strerror(errno));
        return 0;
    }
    exe[n] = '\0';
    const char *base = strrchr(exe, '/');
    base = base ? base + 1 : exe;
    return strncmp(base, "rimecast", 8) == 0;
}

/* 1 when pid blocks, ignores or catches sig (a server that reads it from a signalfd blocks
 * it); 0 when sig would take its default action (SIGUSR2's: end the process); -1 unknown. */
static int handles_signal(pid_t pid, int sig)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    unsigned long long bit = 1ull << (sig - 1), masks = 0;
    int seen = 0;
    while (fgets(line, sizeof(line), f)) {
        if (strncmp(line, "SigBlk:", 7) == 0 || strncmp(line, "SigIgn:", 7) == 0 ||
            strncmp(line, "SigCgt:", 7) == 0) {
            masks |= strtoull(line + 7, NULL, 16);
            seen++;
        }
    }
    fclose(f);
    return seen == 3 ? (masks & bit) != 0 : -1;
}

/* Finds the main process and checks it can be asked to upgrade; 0, or an exit status. */
static int find_server(upgrade_t *u, pid_t pid_arg)
{
    const char *via;
    if (pid_arg > 0) {
        u->old_pid = pid_arg;
        via = "--pid";
    } else if (u->cfg->pidfile) {
        pid_t pid = read_pidfile(u->cfg->pidfile);
        if (pid < 0) {
            fprintf(stderr, "rimecast --upgrade: cannot read the pidfile %s: %s; is the server "
                    "running?\n", u->cfg->pidfile, pid == -EINVAL ? "no PID in it" : strerror(-pid));
            return UPGRADE_NOT_POSSIBLE;
        }
        u->old_pid = pid;
        via = u->cfg->pidfile;
    } else {
        u->old_pid = systemd_main_pid();
        u->from_systemd = 1;
        via = "systemd's " SYSTEMD_UNIT;
        if (!u->old_pid) {
            fprintf(stderr, "rimecast --upgrade: %s names no <pidfile> and systemd runs no %s: "
                    "give the server's PID with --pid\n", u->config_file, SYSTEMD_UNIT);
            return UPGRADE_NOT_POSSIBLE;
        }
    }
    char exe[512];
    if (!pid_alive(u->old_pid)) {
        fprintf(stderr, "rimecast --upgrade: no process %d (from %s): is the server running?\n",
                (int)u->old_pid, via);
        return UPGRADE_NOT_POSSIBLE;
    }
    if (!is_rimecast(u->old_pid, exe, sizeof(exe))) {
        fprintf(stderr, "rimecast --upgrade: process %d (from %s) is not rimecast (%s): no "
                "signal sent\n", (int)u->old_pid, via, exe);
        return UPGRADE_NOT_POSSIBLE;
    }
    if (handles_signal(u->old_pid, SIGUSR2) == 0) {
        fprintf(stderr, "rimecast --upgrade: the running server (PID %d, %s) does not handle "
                "SIGUSR2: it is a version without the upgrade hand-over, which the signal would "
                "stop; no signal sent. Restart it instead (systemctl restart rimecast): its "
                "listeners reconnect.\n", (int)u->old_pid, exe);
        return UPGRADE_NOT_POSSIBLE;
    }
    return 0;
}

/* One error-log line: 1 it says the old process handed over (new_pid set), -1 that the upgrade
 * failed (failed_line set), 0 neither. */
static int match_line(upgrade_t *u, const char *line)
{
    const char *h = strstr(line, HANDED_OVER);
    if (h && (u->new_pid = (pid_t)strtol(h + strlen(HANDED_OVER), NULL, 10)) > 0)
        return 1;
    if (strstr(line, FAILED)) {
        snprintf(u->failed_line, sizeof(u->failed_line), "%.1000s", line);
        return -1;
    }
    return 0;
}

/* Reads the error log from u->log_offset for the old process's line: as match_line, 0 when
 * it is not there yet. Only whole lines are consumed. */
static int scan_log(upgrade_t *u)
{
    if (!u->errlog)
        return 0;
    int fd = open(u->errlog, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    if (st.st_size < u->log_offset)
        u->log_offset = 0; /* rotated meanwhile: the new file from its start */
    char buf[65536];
    int found = 0;
    ssize_t n;
    while (!found && (n = pread(fd, buf, sizeof(buf) - 1, u->log_offset)) > 0) {
        buf[n] = '\0';
        char *last = strrchr(buf, '\n');
        if (!last && n < (ssize_t)sizeof(buf) - 1)
            break; /* a line still being written */
        size_t used = last ? (size_t)(last - buf) + 1 : (size_t)n;
        buf[used - 1] = '\0';
        for (char *line = buf, *eol; line && !found; line = eol ? eol + 1 : NULL) {
            if ((eol = strchr(line, '\n')))
                *eol = '\0';
            found = match_line(u, line);
        }
        u->log_offset += (off_t)used;
    }
    close(fd);
    return found;
}

/* Waits for the old process's verdict. 0 handed over, or an exit status (said on stderr). */
static int wait_handover(upgrade_t *u, double timeout_s)
{
    while (seconds_since(&u->start) < timeout_s) {
        int r = scan_log(u);
        if (r > 0) {
            u->handed_over_s = seconds_since(&u->start);
            return 0;
        }
        if (r < 0) {
            fprintf(stderr, "rimecast --upgrade: the upgrade failed; the server (PID %d) goes on "
                    "serving. From %s:\n%s\n", (int)u->old_pid, u->errlog, u->failed_line);
            return UPGRADE_FAILED;
        }
        if (!u->errlog && u->cfg->pidfile) {
            /* no log to read (the server logs to its standard streams): the pidfile names the
             * new process once it has taken over, while the old one may still drain */
            pid_t p = read_pidfile(u->cfg->pidfile);
            if (p > 0 && p != u->old_pid && pid_alive(p)) {
                u->new_pid = p;
                u->handed_over_s = seconds_since(&u->start);
                return 0;
            }
        }
        if (!pid_alive(u->old_pid) && scan_log(u) == 0) {
            /* gone without a line we saw (a log that is stderr): the pidfile may still say */
            pid_t p = u->cfg->pidfile ? read_pidfile(u->cfg->pidfile) : -1;
            if (p > 0 && p != u->old_pid && pid_alive(p)) {
                u->new_pid = p;
                u->handed_over_s = seconds_since(&u->start);
                return 0;
            }
            fprintf(stderr, "rimecast --upgrade: the server (PID %d) ended without handing "
                    "over; see %s\n", (int)u->old_pid, u->errlog ? u->errlog : "its error log");
            return UPGRADE_FAILED;
        }
        pause_ms(50);
    }
    fprintf(stderr, "rimecast --upgrade: no hand-over within %.0f s: %s\n", timeout_s,
            u->errlog ? "the error log says nothing of it" : "the pidfile still names the old process");
    return UPGRADE_FAILED;
}

int upgrade_plain_listen(const config_t *cfg, int loopback_only, char *host, size_t hcap)
{
    for (const listen_conf_t *l = cfg->listen; l; l = l->next) {
        if (l->tls != LISTEN_TLS_OFF && l->tls != LISTEN_TLS_AUTO)
            continue;
        const char *b = l->bind_address;
        if (!b || !*b || strcmp(b, "0.0.0.0") == 0)
            b = "127.0.0.1";
        else if (strcmp(b, "::") == 0)
            b = "::1";
        else if (loopback_only && strncmp(b, "127.", 4) != 0 && strcmp(b, "::1") != 0)
            continue;
        snprintf(host, hcap, "%s", b);
        return l->port;
    }
    return -1;
}

/* The same as host and port strings; -1 if none. */
static int plain_address(const config_t *cfg, char *host, size_t hcap, char *port, size_t pcap)
{
    int p = upgrade_plain_listen(cfg, 0, host, hcap);
    if (p >= 0)
        snprintf(port, pcap, "%d", p);
    return p < 0 ? -1 : 0;
}

/* One HTTP request to host:port; 0 with the status line and Server header in what, or -1. */
static int http_answers(const char *host, const char *port, char *what, size_t cap)
{
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *ai;
    if (getaddrinfo(host, port, &hints, &ai) != 0)
        return -1;
    int s = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct timeval tv = {2, 0};
    int ok = s >= 0 && setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == 0 &&
             setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0 &&
             connect(s, ai->ai_addr, ai->ai_addrlen) == 0;
    freeaddrinfo(ai);
    char req[512], buf[2048] = "";
    int len = snprintf(req, sizeof(req), "GET /status-json.xsl HTTP/1.0\r\nHost: %s:%s\r\n"
                       "User-Agent: rimecast-upgrade\r\n\r\n", host, port);
    ssize_t got = 0, n;
    if (ok)
        ok = send(s, req, (size_t)len, MSG_NOSIGNAL) == len;
    while (ok && got < (ssize_t)sizeof(buf) - 1 && !strstr(buf, "\r\n\r\n") &&
           (n = recv(s, buf + got, sizeof(buf) - 1 - (size_t)got, 0)) > 0) {
        got += n;
        buf[got] = '\0';
    }
    if (s >= 0)
        close(s);
    buf[got > 0 ? got : 0] = '\0';
    if (!ok || strncmp(buf, "HTTP/1.", 7) != 0)
        return -1;
    char *server = strstr(buf, "\r\nServer: ");
    snprintf(what, cap, "%.*s, Server: %.*s", (int)strcspn(buf, "\r\n"), buf,
             server ? (int)strcspn(server + 10, "\r") : 1, server ? server + 10 : "?");
    return 0;
}

/* Waits until the new process is named where the old one was and answers. 0 or an exit status. */
static int wait_serving(upgrade_t *u, double timeout_s)
{
    char host[256], port[16], what[512];
    const char *missing = "";
    int have_address = plain_address(u->cfg, host, sizeof(host), port, sizeof(port)) == 0;
    int serving = 0;
    while (!serving && seconds_since(&u->start) < timeout_s) {
        if (!pid_alive(u->new_pid)) {
            fprintf(stderr, "rimecast --upgrade: the server handed over to PID %d, which is not "
                    "running; see %s\n", (int)u->new_pid, u->errlog ? u->errlog : "its error log");
            return UPGRADE_FAILED;
        }
        if (u->cfg->pidfile && read_pidfile(u->cfg->pidfile) != u->new_pid)
            missing = "the pidfile to name it";
        else if (u->from_systemd && systemd_main_pid() != u->new_pid)
            missing = "systemd to take it as the main process (NotifyAccess=all in the unit?)";
        else if (have_address && http_answers(host, port, what, sizeof(what)) < 0)
            missing = "an answer on the server's port";
        else
            serving = 1;
        if (!serving)
            pause_ms(100);
    }
    if (!serving) {
        fprintf(stderr, "rimecast --upgrade: handed over to PID %d, but no %s within %.0f s\n",
                (int)u->new_pid, missing, timeout_s);
        return UPGRADE_FAILED;
    }
    printf("rimecast --upgrade: PID %d handed over to PID %d in %.2f s, serving after %.2f s; ",
           (int)u->old_pid, (int)u->new_pid, u->handed_over_s, seconds_since(&u->start));
    if (have_address)
        printf("http://%s:%s/ answers (%s)\n", host, port, what);
    else
        printf("no plain HTTP port to ask\n");
    return UPGRADE_DONE;
}

int upgrade_cmd_run(const char *config_file, pid_t pid, int timeout_s)
{
    upgrade_t u = {.config_file = config_file};
    char err[1024];
    if (config_load(config_file, &u.cfg, err, sizeof(err), NULL) < 0) {
        fprintf(stderr, "rimecast --upgrade: %s\n", err);
        return UPGRADE_USAGE;
    }
    int rc = find_server(&u, pid);
    if (rc)
        goto out;
    /* a log on the server's standard streams is not ours to read: /dev/stderr here is this
     * command's own */
    if (strcmp(u.cfg->errorlog, "-") != 0 && strcmp(u.cfg->errorlog, "/dev/stderr") != 0 &&
        strcmp(u.cfg->errorlog, "/dev/stdout") != 0)
        u.errlog = config_path(u.cfg->logdir, u.cfg->errorlog);
    struct stat st;
    u.log_offset = u.errlog && stat(u.errlog, &st) == 0 ? st.st_size : 0;
    clock_gettime(CLOCK_MONOTONIC, &u.start);
    if (kill(u.old_pid, SIGUSR2) < 0) {
        fprintf(stderr, "rimecast --upgrade: cannot signal PID %d: %s\n", (int)u.old_pid,
                strerror(errno));
        rc = UPGRADE_FAILED;
        goto out;
    }
    rc = wait_handover(&u, timeout_s);
    if (rc == 0)
        rc = wait_serving(&u, timeout_s);
out:
    free(u.errlog);
    config_free(u.cfg);
    return rc;
}
