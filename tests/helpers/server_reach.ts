/**
 * Python programs that tests run inside a sandbox to check that its commands cannot reach the
 * server (`local_server_reach_test.ts`, `docker_server_reach_test.ts`).
 *
 * @module
 */

/** Connect to each abstract `@name` given: `connected`, or `refused <errno>`. */
export const CONNECT_ABSTRACT = `
import socket, sys
for name in sys.argv[1:]:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect("\\0" + name[1:])
        print(name[-4:], "connected")
    except OSError as e:
        print(name[-4:], "refused", e.errno)
`;

/** Listen on 127.0.0.1:9000 and 9001 and print each connection that comes. */
export const SQUAT = `
import socket, select
ls = []
for port in (9000, 9001):
    l = socket.socket()
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind(("127.0.0.1", port))
    l.listen()
    ls.append(l)
print("listening", flush=True)
while True:
    for l in select.select(ls, [], [])[0]:
        c, _ = l.accept()
        print("got a connection on", l.getsockname()[1], flush=True)
        c.close()
`;
