/// A stand-in for `mdq-import-worker` that misbehaves by the name of the
/// file it is asked about and answers like the real one otherwise (by
/// running it: `$MDQ_REAL_WORKER`): `crash` in the path kills it with
/// SIGSEGV (first appending an `x` to a file `crashes` beside the script
/// when one exists, so a test can count the attempts), `hang` stops it answering, `nonsense`
/// makes it answer garbage, `flood` announces an answer too large to read.
package enum FakeImportWorker {
    package static let script = """
        #!/usr/bin/env python3
        import os, signal, struct, subprocess, sys, time
        real = subprocess.Popen([os.environ['MDQ_REAL_WORKER']], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE)
        count = os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), 'crashes')
        while True:
            header = sys.stdin.buffer.read(4)
            if len(header) < 4:
                break
            body = sys.stdin.buffer.read(struct.unpack('<I', header)[0])
            if b'crash' in body:
                if os.path.exists(count):
                    with open(count, 'a') as f:
                        f.write('x')
                os.kill(os.getpid(), signal.SIGSEGV)
            if b'hang' in body:
                time.sleep(600)
            if b'nonsense' in body:
                sys.stdout.buffer.write(struct.pack('<I', 5) + b'\\xff\\xff\\xff\\xff\\xff'); sys.stdout.flush()
                continue
            if b'flood' in body:
                sys.stdout.buffer.write(struct.pack('<I', 0x7fffffff)); sys.stdout.flush()
                time.sleep(600)
            real.stdin.write(header + body); real.stdin.flush()
            answer = real.stdout.read(4)
            answer += real.stdout.read(struct.unpack('<I', answer)[0])
            sys.stdout.buffer.write(answer); sys.stdout.flush()
        """
}
