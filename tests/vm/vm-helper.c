// SPDX-License-Identifier: GPL-2.0-only
/*
 * npu-vm-helper: kernel probes for the QEMU NUMA test harness (tests/vm/).
 *
 * Runs inside the guest; no libnuma, only raw syscalls, so the initramfs needs
 * nothing but libc. Subcommands (exit 0 = ok, 1 = check failed, 2 = usage/error):
 *
 *   migrate-test [--mb M] [--from N] [--to N] [--min-pct P]
 *       fork a child that binds to node FROM, touches M MiB (default 64) and
 *       drops its policy; the parent calls migrate_pages(child, FROM, TO) and
 *       checks in /proc/CHILD/numa_maps that >= P % (default 95) of the
 *       region's anon pages sit on node TO (and were on FROM before).
 *   alloc-hold [--mb M] [--node N] [--seconds S]
 *       touch M MiB on node N, print "READY pid=PID addr=ADDR", then sleep
 *       until killed or S seconds (default 300) pass; for daemon scenarios.
 *   numa-pct PID NODE
 *       sum anon pages over /proc/PID/numa_maps; print
 *       "anon=A node=NODE pages=P pct=X.Y".
 *   proc-connector [--timeout-ms T]
 *       subscribe to the netlink proc connector (CONFIG_PROC_EVENTS), wait
 *       for the listen ack, fork+exec /bin/true and wait for its EXEC event.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/mempolicy.h>
#include <linux/netlink.h>

#define NODEMASK_BITS (8 * sizeof(unsigned long))

static long sys_set_mempolicy(int mode, const unsigned long *mask)
{
	/* maxnode counts one more than the bits the kernel reads (historic) */
	return syscall(SYS_set_mempolicy, mode, mask, mask ? NODEMASK_BITS + 1 : 0);
}

static long sys_migrate_pages(pid_t pid, unsigned long from, unsigned long to)
{
	return syscall(SYS_migrate_pages, pid, NODEMASK_BITS + 1, &from, &to);
}

static int parse_int(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Map size bytes of anonymous memory between two PROT_NONE guard pages so the
 * VMA never merges with a neighbour and its numa_maps line starts at the
 * returned address. */
static char *map_region(size_t size)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *base = mmap(NULL, size + 2 * pg, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (base == MAP_FAILED)
		return NULL;
	if (mprotect(base + pg, size, PROT_READ | PROT_WRITE) < 0)
		return NULL;
	return base + pg;
}

/* Bind to node, fault size bytes in, then return to the default policy (as an
 * inference process that first-touched its memory on the wrong node). */
static char *alloc_on_node(size_t size, int node)
{
	unsigned long mask = 1UL << node;
	long pg = sysconf(_SC_PAGESIZE);
	char *p;

	if (sys_set_mempolicy(MPOL_BIND, &mask) < 0) {
		fprintf(stderr, "vm-helper: set_mempolicy(BIND, %d): %m\n", node);
		return NULL;
	}
	p = map_region(size);
	if (!p) {
		fprintf(stderr, "vm-helper: mmap %zu: %m\n", size);
		return NULL;
	}
	for (size_t off = 0; off < size; off += pg)
		p[off] = (char)off | 1;
	if (sys_set_mempolicy(MPOL_DEFAULT, NULL) < 0) {
		fprintf(stderr, "vm-helper: set_mempolicy(DEFAULT): %m\n");
		return NULL;
	}
	return p;
}

struct vma_stats {
	long anon;
	long on_node[NODEMASK_BITS];
};

/* Parse one numa_maps line's "anon=" and "N<n>=" fields into st. */
static void parse_numa_maps_line(char *line, struct vma_stats *st)
{
	char *save = NULL;

	for (char *tok = strtok_r(line, " \n", &save); tok;
	     tok = strtok_r(NULL, " \n", &save)) {
		long node, pages;

		if (sscanf(tok, "anon=%ld", &pages) == 1)
			st->anon += pages;
		else if (sscanf(tok, "N%ld=%ld", &node, &pages) == 2 &&
			 node >= 0 && node < (long)NODEMASK_BITS)
			st->on_node[node] += pages;
	}
}

/* Stats for the VMA starting at addr, or (addr == 0) summed over all VMAs with
 * anon pages. Returns 0, or -1 if the file or the VMA is missing. */
static int read_numa_maps(pid_t pid, uintptr_t addr, struct vma_stats *st)
{
	char path[64], line[4096];
	bool found = false;
	FILE *f;

	memset(st, 0, sizeof(*st));
	snprintf(path, sizeof(path), "/proc/%d/numa_maps", (int)pid);
	f = fopen(path, "re");
	if (!f) {
		fprintf(stderr, "vm-helper: open %s: %m\n", path);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		uintptr_t start;

		if (sscanf(line, "%" SCNxPTR, &start) != 1)
			continue;
		if (addr && start != addr)
			continue;
		if (!addr && !strstr(line, " anon="))
			continue;
		parse_numa_maps_line(line, st);
		found = true;
	}
	fclose(f);
	if (!found)
		fprintf(stderr, "vm-helper: no VMA at %#" PRIxPTR " in %s\n", addr, path);
	return found ? 0 : -1;
}

static double pct(long part, long whole)
{
	return whole > 0 ? 100.0 * part / whole : 0.0;
}

static int cmd_migrate_test(int argc, char **argv)
{
	long mb = 64, from = 0, to = 3, min_pct = 95;
	int pfd[2], gofd[2], status, rc = 1;
	struct vma_stats before, after;
	uintptr_t addr;
	double t0, t1;
	long not_moved;
	pid_t child;

	for (int i = 1; i < argc; i++) {
		long *dst = !strcmp(argv[i], "--mb") ? &mb :
			    !strcmp(argv[i], "--from") ? &from :
			    !strcmp(argv[i], "--to") ? &to :
			    !strcmp(argv[i], "--min-pct") ? &min_pct : NULL;

		long max = dst == &mb ? 1 << 20 : dst == &min_pct ? 100 : 63;

		if (!dst || i + 1 >= argc || parse_int(argv[++i], 0, max, dst) < 0) {
			fprintf(stderr, "vm-helper: migrate-test: bad argument %s\n", argv[i]);
			return 2;
		}
	}
	if (pipe2(pfd, O_CLOEXEC) < 0 || pipe2(gofd, O_CLOEXEC) < 0) {
		fprintf(stderr, "vm-helper: pipe: %m\n");
		return 2;
	}
	child = fork();
	if (child < 0) {
		fprintf(stderr, "vm-helper: fork: %m\n");
		return 2;
	}
	if (child == 0) {
		char *p = alloc_on_node((size_t)mb << 20, (int)from);
		uintptr_t a = (uintptr_t)p;
		char c;

		alarm(120); /* never outlive a lost parent for long */
		close(pfd[0]);
		close(gofd[1]);
		if (write(pfd[1], &a, sizeof(a)) != sizeof(a))
			_exit(2);
		/* wait until the parent is done (it closes the pipe) */
		while (read(gofd[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(p ? 0 : 2);
	}
	close(pfd[1]);
	close(gofd[0]);
	if (read(pfd[0], &addr, sizeof(addr)) != sizeof(addr) || !addr) {
		fprintf(stderr, "vm-helper: child failed to allocate\n");
		goto out;
	}
	if (read_numa_maps(child, addr, &before) < 0)
		goto out;
	printf("migrate-test: before anon=%ld N%ld=%ld (%.1f%%) N%ld=%ld\n", before.anon,
	       from, before.on_node[from], pct(before.on_node[from], before.anon), to,
	       before.on_node[to]);
	if (before.anon < (mb << 20) / sysconf(_SC_PAGESIZE) * 95 / 100 ||
	    pct(before.on_node[from], before.anon) < min_pct) {
		printf("migrate-test: FAIL pages not on node %ld before migration\n", from);
		goto out;
	}
	t0 = now_s();
	not_moved = sys_migrate_pages(child, 1UL << from, 1UL << to);
	t1 = now_s();
	if (not_moved < 0) {
		printf("migrate-test: FAIL migrate_pages(%d, %ld -> %ld): %s\n", (int)child,
		       from, to, strerror(errno));
		goto out;
	}
	if (read_numa_maps(child, addr, &after) < 0)
		goto out;
	printf("migrate-test: after  anon=%ld N%ld=%ld N%ld=%ld (%.1f%%) not_moved=%ld time=%.2fs\n",
	       after.anon, from, after.on_node[from], to, after.on_node[to],
	       pct(after.on_node[to], after.anon), not_moved, t1 - t0);
	if (pct(after.on_node[to], after.anon) < min_pct) {
		printf("migrate-test: FAIL only %.1f%% on node %ld (want >= %ld%%)\n",
		       pct(after.on_node[to], after.anon), to, min_pct);
		goto out;
	}
	rc = 0;
out:
	close(gofd[1]); /* releases the child */
	close(pfd[0]);
	if (waitpid(child, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "vm-helper: child ended badly (status %#x)\n", status);
		rc = rc ? rc : 1;
	}
	return rc;
}

static int cmd_alloc_hold(int argc, char **argv)
{
	long mb = 64, node = 0, seconds = 300;
	char *p;

	for (int i = 1; i < argc; i++) {
		long *dst = !strcmp(argv[i], "--mb") ? &mb :
			    !strcmp(argv[i], "--node") ? &node :
			    !strcmp(argv[i], "--seconds") ? &seconds : NULL;

		if (!dst || i + 1 >= argc || parse_int(argv[++i], 0, 1 << 20, dst) < 0 ||
		    (dst == &node && node > 63)) {
			fprintf(stderr, "vm-helper: alloc-hold: bad argument %s\n", argv[i]);
			return 2;
		}
	}
	p = alloc_on_node((size_t)mb << 20, (int)node);
	if (!p)
		return 2;
	printf("READY pid=%d addr=%" PRIxPTR "\n", (int)getpid(), (uintptr_t)p);
	fflush(stdout);
	for (double end = now_s() + seconds; now_s() < end;)
		sleep(1);
	return 0;
}

static int cmd_numa_pct(int argc, char **argv)
{
	struct vma_stats st;
	long pid, node;

	if (argc != 3 || parse_int(argv[1], 1, INT32_MAX, &pid) < 0 ||
	    parse_int(argv[2], 0, 63, &node) < 0) {
		fprintf(stderr, "usage: npu-vm-helper numa-pct PID NODE\n");
		return 2;
	}
	if (read_numa_maps((pid_t)pid, 0, &st) < 0)
		return 1;
	printf("anon=%ld node=%ld pages=%ld pct=%.1f\n", st.anon, node, st.on_node[node],
	       pct(st.on_node[node], st.anon));
	return 0;
}

struct cn_req {
	struct nlmsghdr nl;
	struct cn_msg cn;
	enum proc_cn_mcast_op op;
} __attribute__((packed));

/* Wait (bounded) for a proc-connector message matching want(); 0 on match. */
static int cn_wait(int fd, double deadline, bool (*want)(const struct proc_event *, pid_t),
		   pid_t pid)
{
	char buf[4096] __attribute__((aligned(NLMSG_ALIGNTO)));

	for (;;) {
		int left = (int)((deadline - now_s()) * 1000);
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&pfd, 1, left) < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!(pfd.revents & POLLIN))
			continue;
		n = recv(fd, buf, sizeof(buf), 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
		     h = NLMSG_NEXT(h, n)) {
			struct cn_msg *cn = NLMSG_DATA(h);

			if (h->nlmsg_type == NLMSG_ERROR || h->nlmsg_type == NLMSG_NOOP)
				continue;
			if (cn->id.idx != CN_IDX_PROC || cn->id.val != CN_VAL_PROC)
				continue;
			if (want((const struct proc_event *)cn->data, pid))
				return 0;
		}
	}
}

static bool want_ack(const struct proc_event *ev, pid_t pid)
{
	(void)pid;
	return ev->what == PROC_EVENT_NONE && ev->event_data.ack.err == 0;
}

static bool want_exec(const struct proc_event *ev, pid_t pid)
{
	return ev->what == PROC_EVENT_EXEC && ev->event_data.exec.process_pid == pid;
}

static int cmd_proc_connector(int argc, char **argv)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC };
	struct cn_req req;
	long timeout_ms = 5000;
	double deadline;
	int fd, r, status;
	pid_t child;

	if (argc == 3 && !strcmp(argv[1], "--timeout-ms")) {
		if (parse_int(argv[2], 1, 600000, &timeout_ms) < 0)
			return 2;
	} else if (argc != 1) {
		fprintf(stderr, "usage: npu-vm-helper proc-connector [--timeout-ms T]\n");
		return 2;
	}
	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_CONNECTOR);
	if (fd < 0) {
		printf("proc-connector: FAIL socket(NETLINK_CONNECTOR): %s\n", strerror(errno));
		return 1;
	}
	sa.nl_pid = getpid();
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		printf("proc-connector: FAIL bind(CN_IDX_PROC): %s\n", strerror(errno));
		return 1;
	}
	memset(&req, 0, sizeof(req));
	req.nl.nlmsg_len = sizeof(req);
	req.nl.nlmsg_type = NLMSG_DONE;
	req.nl.nlmsg_pid = getpid();
	req.cn.id.idx = CN_IDX_PROC;
	req.cn.id.val = CN_VAL_PROC;
	req.cn.len = sizeof(req.op);
	req.op = PROC_CN_MCAST_LISTEN;
	if (send(fd, &req, sizeof(req), 0) < 0) {
		printf("proc-connector: FAIL send(LISTEN): %s\n", strerror(errno));
		return 1;
	}
	deadline = now_s() + timeout_ms / 1000.0;
	r = cn_wait(fd, deadline, want_ack, 0);
	if (r < 0) {
		printf("proc-connector: FAIL no listen ack: %s\n", strerror(-r));
		return 1;
	}
	child = fork();
	if (child < 0)
		return 2;
	if (child == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	r = cn_wait(fd, deadline, want_exec, child);
	waitpid(child, &status, 0);
	close(fd);
	if (r < 0) {
		printf("proc-connector: FAIL no EXEC event for pid %d: %s\n", (int)child,
		       strerror(-r));
		return 1;
	}
	printf("proc-connector: ok (ack, EXEC event for pid %d)\n", (int)child);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(int, char **);
	} cmds[] = {
		{ "migrate-test", cmd_migrate_test },
		{ "alloc-hold", cmd_alloc_hold },
		{ "numa-pct", cmd_numa_pct },
		{ "proc-connector", cmd_proc_connector },
	};

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 2)
		for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
			if (!strcmp(argv[1], cmds[i].name))
				return cmds[i].fn(argc - 1, argv + 1);
	fprintf(stderr,
		"usage: npu-vm-helper migrate-test|alloc-hold|numa-pct|proc-connector [ARGS]\n");
	return 2;
}
