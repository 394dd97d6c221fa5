/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * main: start-up (config, logs, limits, listen sockets, privileges, workers), the signal loop
 * (SIGHUP reloads the config and reopens the logs; SIGUSR2 hands everything over to the binary
 * installed now, upgrade/; SIGTERM/SIGINT shut down, after <shutdown-grace>) and shutdown,
 * with the process state /health shows (starting, serving, stopping). A process started by an
 * upgrade takes its sockets and connections from the old one instead of binding.
 * Everything that serves clients runs in the workers.
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <libxml/parser.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "admin/xslt.h"
#include "auth/verify.h"
#include "conf/config.h"
#include "build-config.h"
#include "core/fault.h"
#include "core/hugeheap.h"
#include "core/log.h"
#include "core/safefile.h"
#include "core/sdnotify.h"
#include "hls/hls_token.h"
#include "http/fetch.h"
#include "net/worker.h"
#include "upstream/relay.h"
#include "net/server.h"
#include "net/tls.h"
#include "router/dispatch.h"
#include "audience/audience_store.h"
#include "audience/bots.h"
#include "audience/geoip.h"
#include "stream/mount.h"
#include "stream/session.h"
#include "stream/station.h"
#include "upgrade/upgrade_cmd.h"
#include "upgrade/upgrade.h"
#include "yp/yp.h"

typedef struct options {
    const char *config_file;
    int background;
    int upgrade;         /* --upgrade: the command, not a server */
    long upgrade_pid;    /* --pid */
    long upgrade_timeout; /* --timeout, seconds */
} options_t;

enum { OPT_UPGRADE = 256, OPT_PID, OPT_TIMEOUT };

static void usage(FILE *out)
{
    fprintf(out, "usage: rimecast -c CONFIG [-b]\n"
                 "       rimecast --upgrade -c CONFIG [--pid=PID] [--timeout=SECONDS]\n"
                 "       rimecast -v | -h\n"
                 "  -c, --config=CONFIG  read the icecast.xml-style config file CONFIG\n"
                 "  -b, --background     run in the background\n"
                 "  -v, --version        print the version and exit\n"
                 "  -h, --help           print this help and exit\n"
                 "  --upgrade            hand the running server of CONFIG over to the binary\n"
                 "                       installed now, without dropping listeners (SIGUSR2),\n"
                 "                       and wait for the result (default 60 s); its main PID\n"
                 "                       is --pid, else the <pidfile>'s, else systemd's\n"
                 "SIGHUP reloads the config and reopens the logs; SIGUSR2 upgrades to the\n"
                 "binary installed now without dropping listeners; SIGTERM or SIGINT stop.\n");
}

static int parse_args(int argc, char **argv, options_t *o)
{
    static const struct option longopts[] = {
        {"config", required_argument, NULL, 'c'},
        {"background", no_argument, NULL, 'b'},
        {"version", no_argument, NULL, 'v'},
        {"help", no_argument, NULL, 'h'},
        {"upgrade", no_argument, NULL, OPT_UPGRADE},
        {"pid", required_argument, NULL, OPT_PID},
        {"timeout", required_argument, NULL, OPT_TIMEOUT},
        {NULL, 0, NULL, 0},
    };
    int opt;
    while ((opt = getopt_long(argc, argv, "c:bvh", longopts, NULL)) != -1) {
        switch (opt) {
        case 'c':
            o->config_file = optarg;
            break;
        case 'b':
            o->background = 1;
            break;
        case 'v':
            printf("%s %s\n", SERVER_NAME, PACKAGE_VERSION);
#ifdef RIMECAST_READ_AHEAD
            printf("read ahead: io_uring\n"); /* net/read_ahead.h */
#endif
#ifdef RIMECAST_FAULT_INJECTION
            printf("fault injection: %s\n", fault_point_names()); /* a test build */
#endif
            exit(0);
        case 'h':
            usage(stdout);
            exit(0);
        case OPT_UPGRADE:
            o->upgrade = 1;
            break;
        case OPT_PID:
        case OPT_TIMEOUT: {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (*end || v < 1 || v > (opt == OPT_PID ? 0x3fffffffL : 3600L)) {
                fprintf(stderr, "rimecast: --%s: not a %s: %s\n", opt == OPT_PID ? "pid" : "timeout",
                        opt == OPT_PID ? "process ID" : "number of seconds (1-3600)", optarg);
                return -1;
            }
            *(opt == OPT_PID ? &o->upgrade_pid : &o->upgrade_timeout) = v;
            break;
        }
        default:
            usage(stderr);
            return -1;
        }
    }
    if (!o->config_file || ((o->upgrade_pid || o->upgrade_timeout) && !o->upgrade)) {
        usage(stderr);
        return -1;
    }
    return 0;
}

/* The config's warnings, once each, to the error log (or to stderr before it is open). */
static void report_config_warnings(const config_t *cfg, int to_stderr)
{
    for (const config_warning_t *w = cfg->warnings; w; w = w->next) {
        if (to_stderr)
            fprintf(stderr, "warning: %s:%ld: %s\n", cfg->filename, w->line, w->text);
        else
            log_warn("%s:%ld: %s", cfg->filename, w->line, w->text);
    }
}

/* The session log (<session-log>, "none": off), opened or reopened in place; one that cannot be
 * opened is said in the error log and the one in use stays. */
static void open_session_log(const config_t *cfg)
{
    char msg[4200];
    int off = !cfg->sessionlog || strcmp(cfg->sessionlog, "none") == 0;
    char *path = off ? NULL : config_path(cfg->logdir, cfg->sessionlog);
    if ((off || path) && log_session_open(path, msg, sizeof(msg)) < 0)
        log_error("%s", msg);
    free(path);
}

/* Opens the logs cfg names (reopen: SIGHUP's, all or nothing). 0, or -errno with msg saying
 * which log cannot be opened and why. A playlist log that cannot be opened at start-up is only
 * logged. */
static int open_logs(const config_t *cfg, int reopen, char *msg, size_t cap)
{
    char *err = config_path(cfg->logdir, cfg->errorlog);
    char *acc = config_path(cfg->logdir, cfg->accesslog);
    char *pl = cfg->playlistlog ? config_path(cfg->logdir, cfg->playlistlog) : NULL;
    int rc = reopen ? log_reopen(err, acc, pl, cfg->loglevel, msg, cap)
                    : log_open(err, acc, cfg->loglevel, msg, cap);
    if (rc == 0 && !reopen && log_playlist_open(pl, msg, cap) < 0)
        log_error("%s", msg);
    if (rc == 0)
        open_session_log(cfg);
    if (rc == 0)
        log_set_rotation((unsigned long long)cfg->logsize * 1024u, cfg->logarchive);
    free(err);
    free(acc);
    free(pl);
    return rc;
}

static void raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static int drop_privileges(const config_t *cfg)
{
    struct passwd *pw = NULL;
    struct group *gr = NULL;
    if (geteuid() != 0) {
        if (cfg->user || cfg->chroot)
            log_info("not started as root: <changeowner> and <chroot> do not apply");
        return 0;
    }
    if (cfg->user && !(pw = getpwnam(cfg->user))) {
        log_error("changeowner: unknown user %s", cfg->user);
        return -1;
    }
    if (cfg->group && !(gr = getgrnam(cfg->group))) {
        log_error("changeowner: unknown group %s", cfg->group);
        return -1;
    }
    if (cfg->chroot) {
        if (chroot(cfg->basedir) < 0 || chdir("/") < 0) {
            log_error("chroot to %s failed: %s", cfg->basedir, strerror(errno));
            return -1;
        }
    }
    if (!pw)
        return 0;
    gid_t gid = gr ? gr->gr_gid : pw->pw_gid;
    if (setgroups(0, NULL) < 0 || setgid(gid) < 0 || setuid(pw->pw_uid) < 0) {
        log_error("changeowner to %s failed: %s", cfg->user, strerror(errno));
        return -1;
    }
    log_info("running as user %s", cfg->user);
    return 0;
}

/* Started as root: the files the server writes are opened as the user it drops to, where that
 * user may (core/safefile.h), and root's supplementary groups are dropped now. */
static int set_file_owner(const config_t *cfg, const char *config_file)
{
    if (geteuid() != 0 || !cfg->user)
        return 0;
    struct passwd *pw = getpwnam(cfg->user);
    struct group *gr = cfg->group ? getgrnam(cfg->group) : NULL;
    if (!pw || (cfg->group && !gr)) {
        fprintf(stderr, "rimecast: start-up refused: %s: <changeowner> names an unknown %s "
                "(%s)\n", config_file, pw ? "group" : "user", pw ? cfg->group : cfg->user);
        return -1;
    }
    if (setgroups(0, NULL) < 0) {
        fprintf(stderr, "rimecast: start-up refused: cannot drop supplementary groups: %s\n",
                strerror(errno));
        return -1;
    }
    safefile_set_owner(pw->pw_uid, gr ? gr->gr_gid : pw->pw_gid);
    return 0;
}

/* The pidfile we wrote: kept open so that it can be emptied when it cannot be removed (the
 * directory is not writable once privileges are dropped), and its path as seen after chroot. */
static struct {
    int fd;
    char *path;
    dev_t dev;
    ino_t ino;
} pidfile = {-1, NULL, 0, 0};

/* Written as root before privileges are dropped, and root's (core/safefile.h): it never
 * follows a symlink at its name (nor one on its path that others than root may have put
 * there) and refuses anything but a plain file of root's with one link: a pidfile path in a
 * directory the service user can write must not let it overwrite another file. A refusal is
 * logged and start-up goes on without a pidfile. */
static void write_pidfile(const config_t *cfg)
{
    if (!cfg->pidfile)
        return;
    const char *why;
    int fd = safefile_open(cfg->pidfile, SAFEFILE_ROOTS, &why);
    if (fd < 0) {
        log_warn("not writing pidfile %s: %s", cfg->pidfile, why);
        return;
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        log_warn("not writing pidfile %s: %s", cfg->pidfile, strerror(errno));
        close(fd);
        return;
    }
    char line[32];
    int n = snprintf(line, sizeof(line), "%d\n", (int)getpid());
    if (ftruncate(fd, 0) < 0 || write(fd, line, (size_t)n) != n) {
        log_warn("cannot write pidfile %s: %s", cfg->pidfile, strerror(errno));
        close(fd);
        return;
    }
    pidfile.fd = fd;
    pidfile.dev = st.st_dev;
    pidfile.ino = st.st_ino;
    /* after chroot the file is reachable only when it lies under the new root */
    const char *path = cfg->pidfile;
    size_t blen = cfg->basedir ? strlen(cfg->basedir) : 0;
    while (blen > 1 && cfg->basedir[blen - 1] == '/')
        blen--;
    if (cfg->chroot && geteuid() == 0) {
        if (cfg->pidfile[0] == '/' && blen && strncmp(path, cfg->basedir, blen) == 0 &&
            path[blen] == '/')
            path += blen;
        else
            path = NULL;
    }
    pidfile.path = path ? strdup(path) : NULL;
}

/* A process started by an upgrade: the old process's pidfile (open, root's) now names us. */
static void take_pidfile(const upgrade_pidfile_t *pf)
{
    if (pf->fd < 0)
        return;
    char line[32];
    int n = snprintf(line, sizeof(line), "%d\n", (int)getpid());
    if (ftruncate(pf->fd, 0) < 0 || pwrite(pf->fd, line, (size_t)n, 0) != n)
        log_warn("cannot write pidfile %s: %s", pf->path ? pf->path : "(outside the chroot)",
                 strerror(errno));
    pidfile.fd = pf->fd;
    pidfile.path = pf->path;
    pidfile.dev = pf->dev;
    pidfile.ino = pf->ino;
}

/* Removes the pidfile if it is still ours; empties it when it cannot be removed. */
static void remove_pidfile(void)
{
    if (pidfile.fd < 0)
        return;
    struct stat st;
    int ours = pidfile.path && lstat(pidfile.path, &st) == 0 && st.st_dev == pidfile.dev &&
               st.st_ino == pidfile.ino;
    if (!ours || unlink(pidfile.path) < 0) {
        const char *why = ours ? strerror(errno) : "not reachable or replaced";
        if (ftruncate(pidfile.fd, 0) == 0)
            log_info("pidfile %s not removed (%s); emptied it instead",
                     pidfile.path ? pidfile.path : "(outside the chroot)", why);
    }
    close(pidfile.fd);
    free(pidfile.path);
    pidfile.fd = -1;
    pidfile.path = NULL;
}

static int daemonize(void)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid > 0)
        _exit(0);
    setsid();
    int fd = open("/dev/null", O_RDWR);
    if (fd >= 0) {
        dup2(fd, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        if (fd > 2)
            close(fd);
    }
    return 0;
}

static int same_text(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void apply_mount_config(mount_t *m, void *arg)
{
    mount_apply_config(m);
}

/* <workers>, 0 meaning one per online CPU. */
static int worker_count(const config_t *cfg)
{
    int n = cfg->workers > 0 ? cfg->workers : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        n = 1;
    return n > SERVER_MAX_WORKERS ? SERVER_MAX_WORKERS : n;
}

/* The webroot and the adminroot as the running server sees them (after <chroot> and the change
 * of user): one that is missing or unreadable is named once per config load, since every page
 * under it would otherwise be a bare 404 with nothing in the log. */
static void warn_unreadable_page_roots(const config_t *cfg)
{
    const struct {
        const char *setting, *path, *pages;
    } roots[] = {
        {"webroot", cfg->webroot, "the status pages and files"},
        {"adminroot", cfg->adminroot, "the admin pages"},
    };
    for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
        struct stat st;
        const char *why = NULL;
        if (!roots[i].path)
            continue;
        if (stat(roots[i].path, &st) < 0 || access(roots[i].path, R_OK | X_OK) < 0)
            why = strerror(errno);
        else if (!S_ISDIR(st.st_mode))
            why = "not a directory";
        if (why)
            log_warn("<%s> %s: %s; %s answer 404 until it is there", roots[i].setting,
                     roots[i].path, why, roots[i].pages);
    }
}

static void reload(const char *path)
{
    config_t *cfg = NULL;
    char err[1024];
    char msg[4200];
    log_info("SIGHUP: reloading %s", path);
    if (config_load(path, &cfg, err, sizeof(err), NULL) < 0) {
        log_error("reload failed, keeping the running config: %s", err);
        return;
    }
    /* before anything changes: logs that cannot be opened refuse the whole reload */
    if (open_logs(cfg, 1, msg, sizeof(msg)) < 0) {
        log_error("reload failed, keeping the running config: %s", msg);
        config_free(cfg);
        return;
    }
    const config_t *old = server_config();
    if (cfg->chroot != old->chroot || !same_text(cfg->user, old->user) ||
        !same_text(cfg->group, old->group) || !same_text(cfg->basedir, old->basedir) ||
        !same_text(cfg->pidfile, old->pidfile))
        log_warn("<chroot>, <changeowner>, <basedir> and <pidfile> changes take effect after "
                 "a restart");
    server_set_config(cfg);
    report_config_warnings(cfg, 0);
    warn_unreadable_page_roots(cfg);
    tls_reload(cfg); /* a broken certificate is refused there: the one in use stays */
    mount_foreach(apply_mount_config, NULL);
    worker_reload_all(); /* listen sockets, write window, sources' settings */
    worker_set_count(worker_count(cfg)); /* more: started; fewer: drained */
    relay_reload(); /* the <relay> blocks; the master is followed by worker 0's reload hook */
    audience_store_reload();
    geoip_load(); /* read again: a new database file replaces the old one */
    bots_load();  /* the same for the bots list */
    log_info("config reloaded");
}

static int start_workers(const config_t *cfg)
{
    int n = worker_count(cfg);
    dispatch_init();
    for (int i = 0; i < n; i++) {
        if (!worker_new(i))
            return -1;
        server.nworkers = server.nslots = i + 1;
    }
    return n;
}

static void stop_workers(void)
{
    for (int i = 0; i < server.nslots; i++)
        if (server.workers[i])
            worker_stop(server.workers[i]);
    for (int i = 0; i < server.nslots; i++)
        if (server.workers[i])
            worker_free(server.workers[i]);
}

/* Tells the service manager (Type=notify) what the server is doing; a notification that cannot
 * be sent is logged (the manager would otherwise time the service out without a word). */
static void notify_manager(const char *state)
{
    int rc = sd_notify_send(state);
    if (rc < 0)
        log_warn("cannot notify the service manager (NOTIFY_SOCKET) of %.*s: %s",
                 (int)strcspn(state, "\n"), state, strerror(-rc));
}

/* RELOADING=1 with the time the reload began, as systemd asks of a service that reloads itself */
static void notify_reloading(void)
{
    struct timespec now;
    char state[64];
    clock_gettime(CLOCK_MONOTONIC, &now);
    snprintf(state, sizeof(state), "RELOADING=1\nMONOTONIC_USEC=%llu",
             (unsigned long long)now.tv_sec * 1000000ull + (unsigned long long)now.tv_nsec / 1000);
    notify_manager(state);
}

/* SIGTERM/SIGINT with <shutdown-grace>: the server serves on for that long while it says it is
 * stopping (/health answers 503, its siblings send it nobody and it sends its new listeners to
 * them), so that load balancers take it out before its connections close. A second SIGTERM or
 * SIGINT ends the wait; SIGHUP and SIGUSR2 are ignored meanwhile. */
static void shutdown_grace(int sfd)
{
    int grace = server_config()->shutdown_grace;
    if (grace <= 0)
        return;
    log_info("stopping in %d s (<shutdown-grace>): /health answers 503 meanwhile; a second "
             "SIGTERM stops at once", grace);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long long until = (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000 + grace * 1000LL;
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        long long left = until - ((long long)now.tv_sec * 1000 + now.tv_nsec / 1000000);
        struct pollfd p = {.fd = sfd, .events = POLLIN};
        int n = left > 0 ? poll(&p, 1, (int)left) : 0;
        if (n < 0 && errno == EINTR)
            continue;
        struct signalfd_siginfo si;
        if (n <= 0 || read(sfd, &si, sizeof(si)) != sizeof(si))
            return;
        if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
            log_info("signal %d: stopping now", (int)si.ssi_signo);
            return;
        }
        log_info("signal %d ignored: the server is stopping", (int)si.ssi_signo);
    }
}

/* Until a signal stops the server (0) or an upgrade handed over (upgrade_run's 1 or 2). */
static int signal_loop(int sfd, const char *config_file)
{
    for (;;) {
        struct signalfd_siginfo si;
        ssize_t n = read(sfd, &si, sizeof(si));
        if (n < 0 && errno == EINTR)
            continue;
        if (n != sizeof(si))
            return 0;
        if (si.ssi_signo == SIGHUP) {
            notify_reloading();
            reload(config_file);
            notify_manager("READY=1");
        } else if (si.ssi_signo == SIGUSR2) {
            upgrade_pidfile_t pf = {pidfile.fd, pidfile.path, pidfile.dev, pidfile.ino};
            int stop = 0;
            int handed = upgrade_run(sfd, &pf, &stop);
            if (handed)
                return handed;
            if (stop) {
                atomic_store(&server.state, SERVER_STOPPING);
                notify_manager("STOPPING=1");
                return 0;
            }
        } else {
            log_info("signal %d: shutting down", (int)si.ssi_signo);
            /* here only: a process that handed over to a new one must not say it, or systemd
             * would stop the service the new process runs */
            notify_manager("STOPPING=1");
            atomic_store(&server.state, SERVER_STOPPING);
            shutdown_grace(sfd);
            return 0;
        }
    }
}

/* A process started by an upgrade: the state taken from the old one once the workers exist
 * (before they run). What it took is not ours to close on a failure: the process then ends
 * at once, and the old one serves on. */
static void take_over(int hfd)
{
    char err[1024];
    worker_inherit_done();
    if (upgrade_restore(err, sizeof(err)) < 0) {
        log_error("upgrade: %s", err);
        upgrade_refuse(hfd, err);
        _exit(1);
    }
    /* systemd learns the new main PID before the old process may exit (it exits once
     * confirmed): else the unit would see its main process gone and stop the service */
    char state[64];
    snprintf(state, sizeof(state), "MAINPID=%d", (int)getpid());
    notify_manager(state);
    if (getenv("NOTIFY_SOCKET"))
        sd_notify_barrier(5000);
    if (upgrade_confirm(err, sizeof(err)) < 0) {
        log_error("upgrade: %s", err);
        snprintf(state, sizeof(state), "MAINPID=%d", (int)getppid()); /* the old one serves on */
        notify_manager(state);
        _exit(1);
    }
}

/* Start-up to the point where the server may serve: the config loaded and checked (root needs
 * <changeowner>), descriptors raised, the logs opened, the config published, TLS set up. 0, or
 * the exit status (what went wrong said, an upgrade's old process told). */
static int load(const options_t *opt, int hfd)
{
    char err[1024];
    config_t *cfg = NULL;
    if (config_load(opt->config_file, &cfg, err, sizeof(err), NULL) < 0) {
        fprintf(stderr, "%s\n", err);
        if (hfd >= 0)
            upgrade_refuse(hfd, err);
        return 1;
    }
    if (geteuid() == 0 && !cfg->user) {
        fprintf(stderr, "rimecast: refusing to run as root; set <security><changeowner><user>"
                        "(and <group>) in %s so that it drops privileges after start-up\n",
                opt->config_file);
        config_free(cfg);
        return 1;
    }
    raise_fd_limit();
    if (set_file_owner(cfg, opt->config_file) < 0) {
        config_free(cfg);
        return 1;
    }
    if (open_logs(cfg, 0, err, sizeof(err)) < 0) {
        fprintf(stderr, "rimecast: start-up refused: %s\n", err);
        if (hfd >= 0)
            upgrade_refuse(hfd, err);
        report_config_warnings(cfg, 1);
        config_free(cfg);
        return 1;
    }
    report_config_warnings(cfg, 0);
    server_set_config(cfg);
    server.start_time = time(NULL);
    if (tls_setup(cfg, err, sizeof(err)) < 0) {
        log_error("start-up refused: %s", err);
        fprintf(stderr, "rimecast: %s\n", err);
        if (hfd >= 0)
            upgrade_refuse(hfd, err);
        log_close();
        server_free_configs();
        return 1;
    }
    return 0;
}

/* The signals the main thread takes through a signalfd (returned, -1 on failure). */
static int signals_take(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGUSR2);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    return signalfd(-1, &set, SFD_CLOEXEC);
}

/* The workers made (or taken over from an upgrade's old process), privileges dropped, the
 * threads and stores of the subsystems started, the workers running. 0, or -1 (said on
 * standard error; the caller stops what started). */
static int start(const config_t *cfg, int hfd, upgrade_pidfile_t *handed_pidfile)
{
    if (start_workers(cfg) < 0) {
        fprintf(stderr, "rimecast: start-up failed, see the error log\n");
        if (hfd >= 0) {
            upgrade_refuse(hfd, "start-up failed, see its error log");
            _exit(1);
        }
        return -1;
    }
    if (hfd >= 0) {
        take_over(hfd);
        take_pidfile(handed_pidfile);
    } else {
        write_pidfile(cfg);
    }
    if (hfd < 0 && drop_privileges(cfg) < 0) {
        fprintf(stderr, "rimecast: cannot drop privileges, see the error log\n");
        return -1;
    }
    warn_unreadable_page_roots(cfg);
    audience_store_start(); /* as the final user: the database files are its own */
    hls_token_init(cfg->logdir); /* the same: its key file is the user's */
    geoip_load();
    bots_load();
    if (fetch_start() < 0) {
        fprintf(stderr, "rimecast: cannot start the HTTP client thread\n");
        return -1;
    }
    if (verify_start(0) < 0) {
        fprintf(stderr, "rimecast: cannot start the password verifier threads\n");
        return -1;
    }
    if (hfd >= 0) /* it took over a serving server: its mounts, relays and listeners */
        atomic_store(&server.state, SERVER_SERVING);
    for (int i = 0; i < server.nworkers; i++)
        worker_start(server.workers[i]);
    atomic_store(&server.running, 1);
    if (yp_start() < 0)
        log_error("cannot start the YP directory thread: streams are not listed");
    log_info("%s started with %d workers", server_ident(), server.nworkers);
    if (hfd >= 0) {
        char state[64];
        snprintf(state, sizeof(state), "MAINPID=%d\nREADY=1", (int)getpid());
        notify_manager(state);
    }
    relay_start_all();
    if (hfd < 0)
        notify_manager("READY=1"); /* listening since the workers started */
    FAULT_HOLD(FAULT_SERVER_STARTING); /* a test's window into "starting" */
    atomic_store(&server.state, SERVER_SERVING);
    return 0;
}

/* Everything stopped in order, for an exit (not after a hand-over: that exits at once). */
static void stop(int sfd, int curl_ready)
{
    atomic_store(&server.state, SERVER_STOPPING);
    session_server_stopping(); /* the listeners that end from here on end as "shutdown" */
    yp_stop();
    /* before the workers: what it cancels is answered on them (parked clients refused) */
    fetch_stop();
    verify_stop(); /* the same: passwords still waiting are refused on their workers */
    relay_shutdown(); /* no name lookup answers a worker that stopped */
    if (atomic_load(&server.running))
        stop_workers();
    else
        for (int i = 0; i < server.nslots; i++)
            if (server.workers[i])
                worker_free(server.workers[i]);
    audience_store_stop(); /* after the workers: the sessions they ended are written */
    geoip_close();
    station_shutdown(); /* after the sources ended: recordings closed, scripts run */
    remove_pidfile();
    if (sfd >= 0)
        close(sfd);
    log_info("shutdown complete");
    log_close();
    server_free_configs();
    tls_cleanup();
    xslt_cleanup();
    xmlCleanupParser();
    if (curl_ready)
        curl_global_cleanup();
}

/* The life of the process: start-up (load, start), serving (the signal loop), then stop; or,
 * when handed over to a new binary, an exit with nothing of the connections closed. */
int main(int argc, char **argv)
{
    options_t opt = {0};
    char err[1024];
    upgrade_pidfile_t handed_pidfile = {-1, NULL, 0, 0};
    if (parse_args(argc, argv, &opt) < 0)
        return 2;
    if (opt.upgrade)
        return upgrade_cmd_run(opt.config_file, (pid_t)opt.upgrade_pid,
                               opt.upgrade_timeout ? (int)opt.upgrade_timeout : 60);
    upgrade_remember(argc, argv);
    int huge = hugeheap_init(); /* before any thread: the workers' heaps on huge pages */
    int hfd = upgrade_inherited(); /* started by an upgrade: the old process waits on it */
#ifdef RIMECAST_FAULT_INJECTION
    const char *faults = getenv("RIMECAST_FAULT");
    if (fault_init(faults, err, sizeof(err)) < 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    if (faults && *faults)
        fprintf(stderr, "fault injection armed: RIMECAST_FAULT=%s\n", faults);
#endif
    int rc = load(&opt, hfd);
    if (rc)
        return rc;
    if (huge)
        log_info("the workers' heaps use transparent huge pages (docs/PERFORMANCE.md)");
    if (opt.background && hfd < 0 && daemonize() < 0) {
        fprintf(stderr, "rimecast: cannot daemonize: %s\n", strerror(errno));
        return 1;
    }
    int sfd = signals_take();
    int curl_ready = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
    if (hfd >= 0 && upgrade_receive(hfd, &handed_pidfile, err, sizeof(err)) < 0) {
        log_error("upgrade: not taking over: %s", err);
        upgrade_refuse(hfd, err);
        _exit(1); /* the descriptors received are the old process's, still in use there */
    }
    rc = 1;
    if (sfd < 0 || !curl_ready) {
        fprintf(stderr, "rimecast: start-up failed, see the error log\n");
        if (hfd >= 0) {
            upgrade_refuse(hfd, "start-up failed, see its error log");
            _exit(1);
        }
    } else if (start(server_config(), hfd, &handed_pidfile) == 0) {
        int handed = signal_loop(sfd, opt.config_file);
        if (handed) {
            /* handed over: the connections, mounts and pidfile are the new process's now;
             * the workers stay stopped and nothing of theirs is closed or logged as ending,
             * except the TLS listeners kept here, served until they leave */
            if (handed == 2)
                upgrade_drain(sfd);
            audience_store_stop();
            _exit(0);
        }
        rc = 0;
    }
    stop(sfd, curl_ready);
    return rc;
}
