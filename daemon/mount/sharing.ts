// Who may use a mount. The kernel lets only the user who mounted a FUSE filesystem in unless it is
// mounted `allow_other`, which root may always ask for and other users only when /etc/fuse.conf has
// `user_allow_other`. With other users in, the kernel must check permissions itself
// (`default_permissions`) against the modes and owners the mount reports (attrs.ts): otherwise
// anyone could read a 0600 file. `default_permissions` is on in every case, so the owner gets the
// same checks as on a disk (a 0444 file is read-only for them too).
import { readFile } from 'node:fs/promises';

export interface MountSharing {
  options: string[];
  /** Why other users cannot use the mount, for `strata status` and the log; null when they can. */
  limitation: string | null;
}

export async function mountSharing(fuseConf = '/etc/fuse.conf', uid = process.getuid?.() ?? 0): Promise<MountSharing> {
  if (uid === 0 || (await allowsOthers(fuseConf))) return { options: ['default_permissions', 'allow_other'], limitation: null };
  return {
    options: ['default_permissions'],
    limitation: `only this user (uid ${uid}) can use the mount: other users get "Permission denied" from the kernel. To share it, add \`user_allow_other\` to ${fuseConf} (as root) and mount again, or run the daemon as root.`,
  };
}

async function allowsOthers(fuseConf: string): Promise<boolean> {
  try {
    const text = await readFile(fuseConf, 'utf8');
    return text.split('\n').some((line) => line.replace(/#.*/, '').trim() === 'user_allow_other');
  } catch {
    return false;
  }
}
