# Drives a command through a real pseudo-terminal, for spec/repl_spec.lua (needs only Python's
# standard library: run it with /usr/bin/python3).
#   python3 pty_drive.py STEPS -- command args...
# STEPS is a file of lines, one step each (TEXT with Python's backslash escapes: \t \x03 \x1b[A):
#   send TEXT      type TEXT into the terminal
#   expect TEXT    wait (20 s at most) until TEXT appears in the output after the last match
#   sleep SECONDS
# Writes the whole transcript to stdout, then "EXIT <status>" once the command ended (it is
# killed 10 s after the last step). Exits 2 when an expect timed out ("EXPECT TIMEOUT: TEXT").
import os
import pty
import select
import signal
import struct
import sys
import time
import fcntl
import termios


def unescape(s):
    return s.encode('latin-1').decode('unicode_escape').encode('latin-1')


def main():
    steps_path = sys.argv[1]
    cmd = sys.argv[sys.argv.index('--') + 1:]
    steps = []
    with open(steps_path, encoding='latin-1') as f:
        for line in f:
            line = line.rstrip('\n')
            if not line:
                continue
            op, _, arg = line.partition(' ')
            steps.append((op, arg))
    pid, fd = pty.fork()
    if pid == 0:
        os.execvp(cmd[0], cmd)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack('HHHH', 24, 100, 0, 0))
    out = bytearray()
    mark = 0
    status = None

    def pump(timeout):
        r, _, _ = select.select([fd], [], [], timeout)
        if r:
            try:
                data = os.read(fd, 65536)
            except OSError:
                return False
            if not data:
                return False
            out.extend(data)
        return True

    failed = None
    for op, arg in steps:
        if op == 'send':
            os.write(fd, unescape(arg))
        elif op == 'sleep':
            end = time.time() + float(arg)
            while time.time() < end:
                pump(0.05)
        elif op == 'expect':
            want = unescape(arg)
            end = time.time() + float(os.environ.get('PTY_EXPECT_TIMEOUT', '20'))
            while True:
                i = out.find(want, mark)
                if i >= 0:
                    mark = i + len(want)
                    break
                if time.time() > end or not pump(0.1):
                    if out.find(want, mark) >= 0:
                        continue
                    failed = arg
                    break
            if failed:
                break
    end = time.time() + 10
    while time.time() < end:
        done, st = os.waitpid(pid, os.WNOHANG)
        if done:
            status = st
            break
        pump(0.05)
    end = time.time() + 2
    while time.time() < end and pump(0.05):
        pass
    if status is None:
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    sys.stdout.buffer.write(bytes(out))
    code = os.waitstatus_to_exitcode(status) if hasattr(os, 'waitstatus_to_exitcode') else status
    sys.stdout.write('\nEXIT %s\n' % code)
    if failed:
        sys.stdout.write('EXPECT TIMEOUT: %s\n' % failed)
        sys.exit(2)


main()
