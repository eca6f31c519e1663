# Captured data and the throwaway suites that produced it: never collected as tests
# (tests/data/parse/_suites/crash would segfault the harness's own test run).
collect_ignore_glob = ["*"]
