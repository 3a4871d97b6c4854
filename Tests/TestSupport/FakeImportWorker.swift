/// A stand-in for `mdq-import-worker` that misbehaves by the name of the
/// file it is asked about and answers like the real one otherwise (by
/// running it: `$MDQ_REAL_WORKER`, to which it relays the real worker's
/// hello, each request and the descriptor sent with it): `crash` in the
/// path kills it with SIGSEGV (first appending an `x` to a file `crashes`
/// beside the script when one exists, so a test can count the attempts),
/// `hang` stops it answering, `nonsense` makes it answer garbage, `flood`
/// announces an answer too large to read.
package enum FakeImportWorker {
    package static let script = """
        #!/usr/bin/env python3
        import os, signal, socket, struct, subprocess, sys, time
        ours, theirs = socket.socketpair()
        real = subprocess.Popen([os.environ['MDQ_REAL_WORKER']], stdin=theirs, stdout=theirs)
        theirs.close()
        channel = socket.socket(fileno=0)
        count = os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), 'crashes')
        def read(sock, n, fds):
            data = b''
            while len(data) < n:
                chunk, got, _, _ = socket.recv_fds(sock, n - len(data), 4)
                if not chunk:
                    return None
                data += chunk
                fds += got
            return data
        def frame(sock, fds):
            header = read(sock, 4, fds)
            if header is None:
                return None
            return header + read(sock, struct.unpack('<I', header)[0], fds)
        sys.stdout.buffer.write(frame(ours, [])); sys.stdout.flush()
        while True:
            fds = []
            request = frame(channel, fds)
            if request is None:
                break
            if b'crash' in request:
                if os.path.exists(count):
                    with open(count, 'a') as f:
                        f.write('x')
                os.kill(os.getpid(), signal.SIGSEGV)
            if b'hang' in request:
                time.sleep(600)
            if b'nonsense' in request:
                sys.stdout.buffer.write(struct.pack('<I', 5) + b'\\xff\\xff\\xff\\xff\\xff'); sys.stdout.flush()
                continue
            if b'flood' in request:
                sys.stdout.buffer.write(struct.pack('<I', 0x7fffffff)); sys.stdout.flush()
                time.sleep(600)
            socket.send_fds(ours, [request], fds)
            for fd in fds:
                os.close(fd)
            sys.stdout.buffer.write(frame(ours, [])); sys.stdout.flush()
        """
}
