// POSIX ACLs as the kernel hands them to a FUSE filesystem with FUSE_CAP_POSIX_ACL: the xattrs
// `system.posix_acl_access` and `system.posix_acl_default`, in the kernel's binary form (a u32
// version, 2, then entries of u16 tag, u16 permission bits, u32 uid or gid; include/uapi/linux/
// posix_acl_xattr.h). The kernel enforces them and caches them; the filesystem keeps them, keeps the
// mode in step with the access ACL (its owner, group-class and other bits are the ACL's), and gives a
// new file or directory its directory's default ACL (masked by the mode asked for) instead of the
// umask — what ext4 does in fs/posix_acl.c, which this follows.

export const ACL_ACCESS = 'system.posix_acl_access';
export const ACL_DEFAULT = 'system.posix_acl_default';

const VERSION = 2;
export const USER_OBJ = 0x01;
export const USER = 0x02;
export const GROUP_OBJ = 0x04;
export const GROUP = 0x08;
export const MASK = 0x10;
export const OTHER = 0x20;
const UNDEFINED_ID = 0xffffffff;
const ORDER = [USER_OBJ, USER, GROUP_OBJ, GROUP, MASK, OTHER];

export interface AclEntry {
  tag: number;
  perm: number;
  id: number;
}

/** The entries of an ACL xattr, or null when it is not a valid one (EINVAL). */
export function parseAcl(value: Uint8Array): AclEntry[] | null {
  const bytes = Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  if (bytes.length < 4 || (bytes.length - 4) % 8 !== 0 || bytes.readUInt32LE(0) !== VERSION) return null;
  const entries: AclEntry[] = [];
  for (let at = 4; at < bytes.length; at += 8) entries.push({ tag: bytes.readUInt16LE(at), perm: bytes.readUInt16LE(at + 2), id: bytes.readUInt32LE(at + 4) });
  return valid(entries) ? entries : null;
}

/** Exactly one owner, owning group and other entry; a mask when there are named entries; sorted, no duplicates (posix_acl_valid). */
function valid(entries: AclEntry[]): boolean {
  const count = (tag: number) => entries.filter((entry) => entry.tag === tag).length;
  if (entries.some((entry) => !ORDER.includes(entry.tag) || (entry.perm & ~7) !== 0)) return false;
  if (count(USER_OBJ) !== 1 || count(GROUP_OBJ) !== 1 || count(OTHER) !== 1 || count(MASK) > 1) return false;
  if ((count(USER) > 0 || count(GROUP) > 0) && count(MASK) === 0) return false;
  for (let i = 1; i < entries.length; i++) {
    const [a, b] = [entries[i - 1]!, entries[i]!];
    const order = ORDER.indexOf(a.tag) - ORDER.indexOf(b.tag);
    if (order > 0 || (order === 0 && (a.tag === USER || a.tag === GROUP) && a.id >= b.id)) return false;
  }
  return true;
}

export function serializeAcl(entries: AclEntry[]): Buffer {
  const bytes = Buffer.alloc(4 + entries.length * 8);
  bytes.writeUInt32LE(VERSION, 0);
  entries.forEach((entry, i) => {
    bytes.writeUInt16LE(entry.tag, 4 + i * 8);
    bytes.writeUInt16LE(entry.perm, 6 + i * 8);
    bytes.writeUInt32LE(entry.tag === USER || entry.tag === GROUP ? entry.id : UNDEFINED_ID, 8 + i * 8);
  });
  return bytes;
}

/** Only the owner, owning group and other: the mode says it all, and no xattr is kept (posix_acl_equiv_mode). */
export function isMinimal(entries: AclEntry[]): boolean {
  return entries.every((entry) => entry.tag === USER_OBJ || entry.tag === GROUP_OBJ || entry.tag === OTHER);
}

/** The permission bits (0o777) an access ACL means: the group class is the mask when there is one. */
export function modeOf(entries: AclEntry[]): number {
  const perm = (tag: number) => entries.find((entry) => entry.tag === tag)?.perm ?? 0;
  const group = entries.some((entry) => entry.tag === MASK) ? perm(MASK) : perm(GROUP_OBJ);
  return (perm(USER_OBJ) << 6) | (group << 3) | perm(OTHER);
}

/** A chmod of a file with an access ACL: the owner, group class (the mask) and other entries take the mode's bits (posix_acl_chmod). */
export function chmodAcl(entries: AclEntry[], mode: number): AclEntry[] {
  const hasMask = entries.some((entry) => entry.tag === MASK);
  return entries.map((entry) => {
    if (entry.tag === USER_OBJ) return { ...entry, perm: (mode >> 6) & 7 };
    if (entry.tag === OTHER) return { ...entry, perm: mode & 7 };
    if (entry.tag === (hasMask ? MASK : GROUP_OBJ)) return { ...entry, perm: (mode >> 3) & 7 };
    return entry;
  });
}

/**
 * A new file or directory in a directory with default ACL `inherited`, created with `mode`: its
 * access ACL (the default, with the owner, group class and other entries masked by the mode) and
 * the mode that ACL means (posix_acl_create_masq). The umask does not apply.
 */
export function createMasq(inherited: AclEntry[], mode: number): { entries: AclEntry[]; mode: number } {
  const hasMask = inherited.some((entry) => entry.tag === MASK);
  const entries = inherited.map((entry) => {
    if (entry.tag === USER_OBJ) return { ...entry, perm: entry.perm & ((mode >> 6) & 7) };
    if (entry.tag === OTHER) return { ...entry, perm: entry.perm & mode & 7 };
    if (entry.tag === (hasMask ? MASK : GROUP_OBJ)) return { ...entry, perm: entry.perm & ((mode >> 3) & 7) };
    return entry;
  });
  return { entries, mode: (mode & ~0o777) | modeOf(entries) };
}
