//! The host users untrusted work runs as when `arbiter serve` runs as root: the finelog server as
//! [`FINELOG_USER`] (its store is its own; a `COPY … TO` that got past the gates could write nothing of
//! Arbiter's). `serve` as another user runs them as itself. Users are looked up, or created as system
//! users without a home or a shell (`useradd --system`); `scripts/setup.sh` creates them too.

use std::ffi::CString;

/// The user Arbiter's own finelog server runs as.
pub const FINELOG_USER: &str = "arbiter-finelog";

/// A host user: name, uid and primary gid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostUser {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
}

/// True when this process runs as root.
pub fn is_root() -> bool {
    // SAFETY: geteuid(2) has no arguments and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// The user named `name`, if the host has one.
pub fn lookup(name: &str) -> Option<HostUser> {
    let c_name = CString::new(name).ok()?;
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: getpwnam_r fills `pwd` with pointers into `buf`, both alive for this call; only the
    // numeric fields are read after it returns.
    let rc = unsafe { libc::getpwnam_r(c_name.as_ptr(), &mut pwd, buf.as_mut_ptr(), buf.len(), &mut result) };
    (rc == 0 && !result.is_null()).then(|| HostUser { name: name.to_string(), uid: pwd.pw_uid, gid: pwd.pw_gid })
}

/// The user named `name`, created as a system user (no home, no shell) if missing. Only root creates.
pub fn ensure(name: &str) -> Result<HostUser, String> {
    if let Some(user) = lookup(name) {
        return Ok(user);
    }
    if !is_root() {
        return Err(format!("the host user {name} does not exist (only root creates it)"));
    }
    let out = std::process::Command::new("useradd")
        .args(["--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", name])
        .output()
        .map_err(|e| format!("cannot run useradd to create {name}: {e}"))?;
    if !out.status.success() && lookup(name).is_none() {
        return Err(format!("useradd {name}: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    lookup(name).ok_or_else(|| format!("useradd made no user {name}"))
}

/// Gives `path` (and, for a folder, everything in it; links are not followed) to `user`.
pub fn chown_tree(path: &std::path::Path, user: &HostUser) -> Result<(), String> {
    let meta = std::fs::symlink_metadata(path).map_err(|e| format!("{}: {e}", path.display()))?;
    std::os::unix::fs::lchown(path, Some(user.uid), Some(user.gid)).map_err(|e| format!("chown {}: {e}", path.display()))?;
    if meta.is_dir() {
        for entry in std::fs::read_dir(path).map_err(|e| format!("{}: {e}", path.display()))? {
            let entry = entry.map_err(|e| e.to_string())?;
            chown_tree(&entry.path(), user)?;
        }
    }
    Ok(())
}

/// Becomes `user` for good: no supplementary groups, its gid and uid (real, effective and saved, so
/// no way back), no new privileges (no setuid program can raise it again). Called by Arbiter's own
/// code inside a sandbox `bwrap` started as root, before it runs anything untrusted. Checked after.
pub fn drop_to(user: &HostUser) -> Result<(), String> {
    let fail = |what: &str| Err(format!("cannot drop to {} ({what}): {}", user.name, std::io::Error::last_os_error()));
    // SAFETY: plain syscalls on integers; in a process whose only threads are Rust's, glibc applies the
    // id changes to every thread.
    unsafe {
        if libc::setgroups(0, std::ptr::null()) != 0 {
            return fail("setgroups");
        }
        if libc::setresgid(user.gid, user.gid, user.gid) != 0 {
            return fail("setresgid");
        }
        if libc::setresuid(user.uid, user.uid, user.uid) != 0 {
            return fail("setresuid");
        }
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return fail("no_new_privs");
        }
        if user.uid != 0 && (libc::setuid(0) == 0 || libc::geteuid() != user.uid) {
            return Err(format!("dropping to {} did not hold", user.name));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_are_looked_up_by_name() {
        let root = lookup("root").expect("every host has root");
        assert_eq!((root.uid, root.gid), (0, 0));
        assert_eq!(lookup("no-such-user-arbiter-x"), None);
    }
}
