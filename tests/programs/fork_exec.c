/* fork_exec.c -- pitfall 16: fork, exec of itself, wait, exit status.
 *
 * The program re-executes its own file (/proc/self/exe, i.e. the rewritten
 * binary when testing the rewrite) with arguments, three levels deep, via
 * fork+execv and via posix_spawn; each level's exit status is derived from
 * its child's and propagated to the top.  pthread_atfork handlers are code
 * pointers called by libc inside fork().  This catches rewriters whose
 * output only works in the process that was "prepared" somehow (e.g. depends
 * on the original file, its path, the environment or on state set up before
 * main), and checks that exit statuses and signals of the rewritten binary
 * are reported faithfully.  Output is written only by a process whose
 * children have all finished, so it is deterministic.
 */
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

static int prepare_calls, parent_calls, child_calls;
static void at_prepare(void) { prepare_calls++; }
static void at_parent(void) { parent_calls++; }
static void at_child(void) { child_calls++; }

static int describe(int status, char *buf, size_t n)
{
    if (WIFEXITED(status)) {
        snprintf(buf, n, "exited with %d", WEXITSTATUS(status));
        return WEXITSTATUS(status);
    }
    if (WIFSIGNALED(status)) {
        snprintf(buf, n, "killed by signal %d", WTERMSIG(status));
        return 100 + WTERMSIG(status);
    }
    snprintf(buf, n, "unknown status");
    return 99;
}

/* fork + execv of ourselves with "child LEVEL"; returns the wait status */
static int run_child_fork(int level)
{
    char arg[16];
    snprintf(arg, sizeof arg, "%d", level);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        exit(90);
    }
    if (pid == 0) {
        /* in the child: the atfork child handler has already run */
        if (child_calls != 1)
            _exit(91);
        char *argv[] = { "fork_exec", "child", arg, NULL };
        execv("/proc/self/exe", argv);
        _exit(92);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid)
        exit(93);
    return status;
}

static int run_child_spawn(const char *mode, int level)
{
    char arg[16];
    snprintf(arg, sizeof arg, "%d", level);
    fflush(stdout);
    char *argv[] = { "fork_exec", (char *)mode, arg, NULL };
    pid_t pid;
    int err = posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, environ);
    if (err != 0) {
        fprintf(stderr, "posix_spawn: %s\n", strerror(err));
        exit(94);
    }
    int status;
    if (waitpid(pid, &status, 0) != pid)
        exit(95);
    return status;
}

static int child_main(int level)
{
    char buf[64];
    if (level == 0) {
        printf("  level 0: leaf, exiting with 3\n");
        return 3;
    }
    int status = run_child_fork(level - 1);
    int code = describe(status, buf, sizeof buf);
    printf("  level %d: child %s\n", level, buf);
    return code + 1;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    pthread_atfork(at_prepare, at_parent, at_child);
    if (argc == 3 && strcmp(argv[1], "child") == 0)
        return child_main(atoi(argv[2]));
    if (argc == 3 && strcmp(argv[1], "signal") == 0) {
        printf("  spawned child raising signal %d\n", atoi(argv[2]));
        raise(atoi(argv[2]));
        return 97;
    }
    if (argc != 1) {
        fprintf(stderr, "usage: fork_exec\n");
        return 2;
    }

    char buf[64];
    printf("parent: starting chain of 3 levels\n");
    int code = describe(run_child_fork(2), buf, sizeof buf);
    printf("parent: chain %s\n", buf);
    printf("parent: atfork prepare=%d parent=%d child=%d\n", prepare_calls, parent_calls, child_calls);

    int s = run_child_spawn("signal", SIGTERM);
    describe(s, buf, sizeof buf);
    printf("parent: spawned child %s\n", buf);
    s = run_child_spawn("child", 1);
    int code2 = describe(s, buf, sizeof buf);
    printf("parent: spawned chain %s\n", buf);
    return code + code2; /* 5 + 4 */
}
