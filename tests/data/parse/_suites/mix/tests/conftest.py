import sys

# A huge switch interval: with the GIL on, a thread keeps the GIL through a
# short loop, so the unlocked read/write in test_race cannot interleave; with
# the GIL off, threads truly run at once and it interleaves.
sys.setswitchinterval(100.0)
