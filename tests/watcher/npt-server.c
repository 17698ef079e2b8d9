/* SPDX-License-Identifier: GPL-2.0-only */
/* npt-server: behaves, as seen from /proc, like the inference servers described in
 * docs/process-watcher.md, for the live watcher tests.
 *
 *   npt-server vllm TP          like `vllm serve`: spawns TP workers by fork+exec of
 *                               itself ("npt-server vllm-worker R"), like multiprocessing's
 *                               spawn start method; keeps its own name and environment
 *   npt-server vllm-orphans TP  the same, but the workers outlive the launcher, which
 *                               exits once they have retitled (a launcher that crashed):
 *                               they are adopted by init or a subreaper
 *   npt-server vllm-wiped TP [bare]  like `vllm serve` retitled by setproctitle: starts
 *                               multiprocessing's resource tracker ("npt-server -c from
 *                               multiprocessing.resource_tracker import main;main(5)",
 *                               which keeps its environment; not with bare) and the TP
 *                               workers by fork+exec, then retitles itself
 *                               "VLLM::APIServer" (its environ wiped)
 *   npt-server launch PROG TP   a launcher of its own (installed under another name, no
 *                               rule matches it): fork+execs "PROG vllm-worker R" with its
 *                               environment unchanged, and keeps its name and environment
 *   npt-server vllm-worker R    touches NPT_WORKER_MIB MiB (when set: its weights), starts
 *                               one unnamed (compute) thread, then after a
 *                               Python-like start-up delay retitles itself
 *                               "VLLM::Worker_TP<R>" the way setproctitle does (argv and
 *                               environ overwritten, comm set), then starts acl_thread,
 *                               release_thread, hccl_watchdog_t and two unnamed threads
 *   npt-server sglang TP        like sglang.launch_server whose environ was overwritten:
 *                               wipes its own environ area, then forks (no exec) TP
 *                               schedulers that retitle to "sglang::scheduler_TP<n>"
 *   npt-server mindie D...      like mindieservice_daemon: execs one
 *                               "npt-server mindie-backend --local_rank R --npu_device_id D"
 *                               per D
 *   npt-server tgi N            like text-generation-launcher: execs N shards
 *                               "npt-server tgi-shard" with RANK=i in their environment
 *   npt-server threads          steps on SIGUSR1: create a thread, rename it, end it
 *   npt-server renames N        steps on SIGUSR1: its thread "storm_0" renames itself N
 *                               times, ending "storm_done"; the main thread names itself
 *                               "rank3"; the thread renames itself N times again, ending
 *                               "storm_again"
 *   npt-server leader-exits     on SIGUSR2 the main thread leaves, "lead_worker" runs on;
 *                               steps on SIGUSR1: create a thread, end the process
 *   npt-server open-device PATH MS   opens PATH (a device node) after MS milliseconds
 *   npt-server pause ...        just waits
 * Every mode ends waiting for a signal; children die with the parent (PR_SET_PDEATHSIG). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static int g_argc;
static char **g_argv;
static const char *self;

static void msleep(unsigned ms) {
        struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long) (ms % 1000) * 1000000L };
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

/* What the setproctitle library does: move environ to the heap (so getenv() still works),
 * then overwrite the contiguous argv + environ area with the title and NULs, and set the
 * comm of the calling thread. After this /proc/PID/cmdline is the title and
 * /proc/PID/environ reads as NULs. */
static void setproctitle(const char *title) {
        char *start = g_argv[0], *end = g_argv[g_argc - 1] + strlen(g_argv[g_argc - 1]) + 1;
        size_t n = 0;
        char **copy;

        for (char **e = environ; *e; e++)
                n++;
        copy = calloc(n + 1, sizeof *copy);
        for (size_t i = 0; i < n; i++) {
                if (environ[i] == end)
                        end = environ[i] + strlen(environ[i]) + 1;
                copy[i] = strdup(environ[i]);
        }
        environ = copy;
        memset(start, 0, (size_t) (end - start));
        strncpy(start, title, (size_t) (end - start) - 1);
        (void) prctl(PR_SET_NAME, title, 0, 0, 0);
}

static void wipe_environ_only(void) {
        char *start = NULL, *end = NULL;
        size_t n = 0;
        char **copy;

        for (char **e = environ; *e; e++) {
                if (!start)
                        start = *e;
                end = *e + strlen(*e) + 1;
                n++;
        }
        copy = calloc(n + 1, sizeof *copy);
        for (size_t i = 0; i < n; i++)
                copy[i] = strdup(environ[i]);
        environ = copy;
        if (start)
                memset(start, 0, (size_t) (end - start));
}

static void wait_forever(void) {
        for (;;)
                pause();
}

static bool orphans; /* children outlive us (no PR_SET_PDEATHSIG) */
char *volatile weights; /* NPT_WORKER_MIB: kept, so that the compiler keeps the memset */

static pid_t spawn(char *const argv[], char *const envp[]) {
        pid_t pid = fork();

        if (pid == 0) {
                if (!orphans)
                        (void) prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
                execve(self, argv, envp ? envp : environ);
                _exit(127);
        }
        return pid;
}

static void *named_thread(void *arg) {
        if (arg)
                (void) prctl(PR_SET_NAME, (const char *) arg, 0, 0, 0);
        wait_forever();
        return NULL;
}

static void start_thread(const char *name) {
        pthread_t t;
        pthread_create(&t, NULL, named_thread, (void *) name);
}

static int mode_vllm(int tp) {
        for (int r = 0; r < tp; r++) {
                char rank[16];
                snprintf(rank, sizeof rank, "%d", r);
                char *argv[] = { (char *) self, (char *) "vllm-worker", rank, NULL };
                spawn(argv, NULL);
        }
        if (orphans) {
                msleep(1000); /* the workers have retitled */
                return 0;
        }
        wait_forever();
        return 0;
}

static int mode_vllm_wiped(int tp, bool bare) {
        if (!bare) {
                char *argv[] = { (char *) self, (char *) "-c",
                                 (char *) "from multiprocessing.resource_tracker import main;main(5)", NULL };
                spawn(argv, NULL);
        }
        for (int r = 0; r < tp; r++) {
                char rank[16];
                snprintf(rank, sizeof rank, "%d", r);
                char *argv[] = { (char *) self, (char *) "vllm-worker", rank, NULL };
                spawn(argv, NULL);
        }
        msleep(50);
        setproctitle("VLLM::APIServer");
        wait_forever();
        return 0;
}

static int mode_launch(const char *prog, int tp) {
        for (int r = 0; r < tp; r++) {
                char rank[16];
                snprintf(rank, sizeof rank, "%d", r);
                pid_t pid = fork();
                if (pid == 0) {
                        char *argv[] = { (char *) prog, (char *) "vllm-worker", rank, NULL };
                        (void) prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
                        execve(prog, argv, environ);
                        _exit(127);
                }
        }
        wait_forever();
        return 0;
}

static int mode_vllm_worker(int rank) {
        const char *mib = getenv("NPT_WORKER_MIB");
        char title[64];

        if (mib) {
                /* The model's weights: touched here, so on this CPU's node (first touch). */
                size_t n = (size_t) strtoul(mib, NULL, 10) << 20;
                weights = n ? malloc(n) : NULL;
                if (weights)
                        memset(weights, 1, n);
        }
        start_thread(NULL); /* a compute thread older than the title (torch's pool) */
        msleep(150); /* the interpreter starts, imports torch, ... */
        snprintf(title, sizeof title, "VLLM::Worker_TP%d", rank);
        setproctitle(title);
        start_thread("acl_thread");
        start_thread("release_thread");
        start_thread("hccl_watchdog_t");
        start_thread(NULL);
        start_thread(NULL);
        wait_forever();
        return 0;
}

static int mode_sglang(int tp) {
        msleep(100);
        wipe_environ_only();
        for (int r = 0; r < tp; r++) {
                pid_t pid = fork();
                if (pid == 0) {
                        char title[64];
                        (void) prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
                        msleep(100);
                        snprintf(title, sizeof title, "sglang::scheduler_TP%d", r);
                        setproctitle(title);
                        start_thread("pt_thread_pool");
                        wait_forever();
                }
        }
        wait_forever();
        return 0;
}

static int mode_mindie(int argc, char **argv) {
        for (int i = 0; i < argc; i++) {
                char rank[16];
                snprintf(rank, sizeof rank, "%d", i);
                char *a[] = { (char *) self, (char *) "mindie-backend", (char *) "--local_rank", rank,
                              (char *) "--npu_device_id", argv[i], NULL };
                spawn(a, NULL);
        }
        wait_forever();
        return 0;
}

static int mode_tgi(int n) {
        for (int i = 0; i < n; i++) {
                size_t k = 0;
                for (char **e = environ; *e; e++)
                        k++;
                char **envp = calloc(k + 2, sizeof *envp);
                char rank[32];
                for (size_t j = 0; j < k; j++)
                        envp[j] = environ[j];
                snprintf(rank, sizeof rank, "RANK=%d", i);
                envp[k] = rank;
                char *a[] = { (char *) self, (char *) "tgi-shard", NULL };
                spawn(a, envp);
                free(envp);
        }
        wait_forever();
        return 0;
}

/* ---- threads: steps on SIGUSR1 ---- */
static pthread_t step_thread;
static volatile int thread_stop;

static void *stepped(void *arg) {
        while (!thread_stop)
                msleep(10);
        return NULL;
}

static _Noreturn void mode_threads(void) {
        sigset_t set;
        int sig, step = 0;

        sigemptyset(&set);
        sigaddset(&set, SIGUSR1);
        pthread_sigmask(SIG_BLOCK, &set, NULL); /* before any thread: they inherit it */
        start_thread("early_thread"); /* exists before any watcher can have matched us */
        for (;;) {
                if (sigwait(&set, &sig) != 0)
                        continue;
                switch (step++) {
                case 0:
                        pthread_create(&step_thread, NULL, stepped, NULL);
                        break;
                case 1:
                        pthread_setname_np(step_thread, "renamed_later");
                        break;
                case 2:
                        thread_stop = 1;
                        pthread_join(step_thread, NULL);
                        break;
                default:
                        break;
                }
        }
}

/* ---- renames: steps on SIGUSR1 ---- */
static sem_t storm_go;
static unsigned storm_n;

static void *storm(void *arg) {
        const char *const ends[] = { "storm_done", "storm_again" };
        char name[16];

        for (unsigned round = 0; round < 2; round++) {
                while (sem_wait(&storm_go) < 0)
                        ;
                for (unsigned i = 0; i < storm_n; i++) {
                        snprintf(name, sizeof name, "storm_%u", i % 1000);
                        prctl(PR_SET_NAME, (unsigned long) name, 0, 0, 0);
                }
                prctl(PR_SET_NAME, (unsigned long) ends[round], 0, 0, 0);
        }
        wait_forever();
        return NULL;
}

static _Noreturn void mode_renames(unsigned n) {
        sigset_t set;
        pthread_t t;
        int sig, step = 0;

        storm_n = n;
        sem_init(&storm_go, 0, 0);
        sigemptyset(&set);
        sigaddset(&set, SIGUSR1);
        pthread_sigmask(SIG_BLOCK, &set, NULL); /* before any thread: they inherit it */
        pthread_create(&t, NULL, storm, NULL);
        pthread_setname_np(t, "storm_0");
        for (;;) {
                if (sigwait(&set, &sig) != 0)
                        continue;
                if (step++ == 1)
                        prctl(PR_SET_NAME, (unsigned long) "rank3", 0, 0, 0);
                else
                        sem_post(&storm_go);
        }
}

/* On SIGUSR2 the main thread leaves (pthread_exit) and "lead_worker" runs on: on the first SIGUSR1
 * it starts a thread, on the second it ends the process (exit() from that thread), which
 * then sends no EXIT event of its main thread: that one came when the thread left. */
static void *lead_worker(void *arg) {
        sigset_t set;
        int sig;

        sigemptyset(&set);
        sigaddset(&set, SIGUSR1);
        while (sigwait(&set, &sig) != 0)
                ;
        pthread_create(&step_thread, NULL, stepped, NULL);
        while (sigwait(&set, &sig) != 0)
                ;
        exit(0);
}

static _Noreturn void mode_leader_exits(void) {
        sigset_t set, usr2;
        pthread_t t;
        int sig;

        sigemptyset(&set);
        sigaddset(&set, SIGUSR1);
        sigaddset(&set, SIGUSR2);
        pthread_sigmask(SIG_BLOCK, &set, NULL); /* before any thread: they inherit it */
        pthread_create(&t, NULL, lead_worker, NULL);
        pthread_setname_np(t, "lead_worker");
        /* Until SIGUSR2, so that a watcher can read its executable: a main thread gone
         * leaves no /proc/PID/exe. */
        sigemptyset(&usr2);
        sigaddset(&usr2, SIGUSR2);
        while (sigwait(&usr2, &sig) != 0)
                ;
        pthread_exit(NULL);
}

static int mode_open_device(const char *path, unsigned ms) {
        msleep(ms);
        if (open(path, O_RDONLY) < 0) {
                perror("npt-server: open");
                return 1;
        }
        wait_forever();
        return 0;
}

int main(int argc, char *argv[]) {
        g_argc = argc;
        g_argv = argv;
        self = "/proc/self/exe";
        {
                static char path[4096];
                ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
                if (n > 0) {
                        path[n] = 0;
                        self = path;
                }
        }
        if (argc < 2) {
                fprintf(stderr, "usage: npt-server MODE ...\n");
                return 2;
        }
        const char *mode = argv[1];
        if (strcmp(mode, "vllm") == 0 && argc == 3)
                return mode_vllm(atoi(argv[2]));
        if (strcmp(mode, "vllm-orphans") == 0 && argc == 3) {
                orphans = true;
                return mode_vllm(atoi(argv[2]));
        }
        if (strcmp(mode, "vllm-wiped") == 0 && (argc == 3 || argc == 4))
                return mode_vllm_wiped(atoi(argv[2]), argc == 4 && strcmp(argv[3], "bare") == 0);
        if (strcmp(mode, "launch") == 0 && argc == 4)
                return mode_launch(argv[2], atoi(argv[3]));
        if (strcmp(mode, "vllm-worker") == 0 && argc == 3)
                return mode_vllm_worker(atoi(argv[2]));
        if (strcmp(mode, "sglang") == 0 && argc == 3)
                return mode_sglang(atoi(argv[2]));
        if (strcmp(mode, "mindie") == 0)
                return mode_mindie(argc - 2, argv + 2);
        if (strcmp(mode, "tgi") == 0 && argc == 3)
                return mode_tgi(atoi(argv[2]));
        if (strcmp(mode, "threads") == 0)
                mode_threads();
        if (strcmp(mode, "renames") == 0 && argc == 3)
                mode_renames((unsigned) atoi(argv[2]));
        if (strcmp(mode, "leader-exits") == 0)
                mode_leader_exits();
        if (strcmp(mode, "open-device") == 0 && argc == 4)
                return mode_open_device(argv[2], (unsigned) atoi(argv[3]));
        /* pause, mindie-backend, tgi-shard, anything else: wait */
        wait_forever();
        return 0;
}
