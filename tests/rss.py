"""Peak RSS of a process counted from its own exec, for the tests that measure memory in a child process.

ru_maxrss (getrusage) is not that: Linux carries the parent's high-water mark into a child that forks (or
vforks) and execs, so a child of a pytest worker that once grew to 1.2 GB reports at least 1.2 GB, and a
difference of two ru_maxrss readings inside it can stay 0 whatever the child does.  VmHWM in /proc/self/status
belongs to the process's own address space.  PEAK_RSS_MB is source text: the child scripts run with -c."""

PEAK_RSS_MB = '''
def peak_rss_mb():
    """Peak RSS of this process since its exec, in MB (VmHWM; ru_maxrss where there is no /proc)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
'''
