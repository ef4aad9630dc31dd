import { readFileSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";

/** The unprivileged account PostgreSQL runs as when we are root. */
export interface RunAsUser {
  name: string;
  uid: number;
  gid: number;
}

/**
 * PostgreSQL refuses to run as root (a compromised server must not own the
 * machine), so a root parent (typical in containers) runs initdb and postgres
 * as `postgres` when that account exists, else as `nobody`. Returns undefined
 * when we are not root: then postgres simply runs as us.
 */
export function unprivilegedUser(): RunAsUser | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const user = lookupUser("postgres") ?? lookupUser("nobody");
  if (!user) {
    throw new Error("embedded-postgres: running as root, and neither a `postgres` nor a `nobody` user exists to run PostgreSQL as");
  }
  return user;
}

function lookupUser(name: string): RunAsUser | undefined {
  let passwd: string;
  try {
    passwd = readFileSync("/etc/passwd", "utf8");
  } catch {
    return undefined;
  }
  for (const line of passwd.split("\n")) {
    const [login, , uid, gid] = line.split(":");
    if (login === name && uid !== undefined && gid !== undefined) {
      return { name, uid: Number(uid), gid: Number(gid) };
    }
  }
  return undefined;
}

/**
 * Fails with a message naming the first ancestor directory of `target` that
 * `user` cannot enter. Without this check postgres fails later with a bare
 * "Permission denied" that does not say which directory is the problem.
 *
 * Only owner/group/other bits of the primary group are considered: node drops
 * supplementary groups when it switches uid, so that is exactly what the
 * child gets.
 */
export function assertTraversable(target: string, user: RunAsUser, what: string): void {
  const chain: string[] = [];
  for (let dir = dirname(resolve(target)); ; dir = dirname(dir)) {
    chain.unshift(dir);
    if (dirname(dir) === dir) break;
  }
  for (const dir of chain) {
    const st = statSync(dir);
    const bit = st.uid === user.uid ? 0o100 : st.gid === user.gid ? 0o010 : 0o001;
    if ((st.mode & bit) === 0) {
      throw new Error(
        `embedded-postgres: ${what} ${target} is not reachable by user ${user.name} (uid ${user.uid}), ` +
          `because ${dir} is not traversable (mode ${(st.mode & 0o777).toString(8)}); ` +
          `choose a location that user can reach or make ${dir} traversable (chmod o+x)`,
      );
    }
  }
}
