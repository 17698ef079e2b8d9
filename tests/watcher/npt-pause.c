/* SPDX-License-Identifier: GPL-2.0-only */
/* npt-pause: the smallest process that stays alive, for tests that start thousands of
 * them. No libc: a static binary of one page, so 5,000 of them cost little more than the
 * kernel's own structures. Exits on any signal's default action. */

#if defined(__x86_64__)
__attribute__((noreturn)) void _start(void);
__attribute__((noreturn)) void _start(void) {
        for (;;)
                __asm__ volatile("syscall" : : "a"(34) /* pause */ : "rcx", "r11", "memory");
}
#elif defined(__aarch64__)
__attribute__((noreturn)) void _start(void);
__attribute__((noreturn)) void _start(void) {
        /* ppoll(NULL, 0, NULL, NULL): aarch64 has no pause() */
        for (;;) {
                register long x8 __asm__("x8") = 73;
                register long x0 __asm__("x0") = 0;
                register long x1 __asm__("x1") = 0;
                register long x2 __asm__("x2") = 0;
                register long x3 __asm__("x3") = 0;
                __asm__ volatile("svc #0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
        }
}
#else
#error "npt-pause: add this architecture's pause syscall"
#endif
