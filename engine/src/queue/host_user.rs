//! The host users untrusted work runs as when `arbiter serve` runs as root: the finelog server as
//! [`FINELOG_USER`] (its store is its own; a `COPY … TO` that got past the gates could write nothing of
//! Arbiter's), local pipeline trials as [`TRIAL_USER`] (no capabilities, no way back to root, a seccomp
//! filter: [`drop_to`], [`confine`]). `serve` as another user runs them as itself. Users are looked up, or created as system
//! users without a home or a shell (`useradd --system`); `scripts/setup.sh` creates them too.

use std::ffi::CString;

/// The user Arbiter's own finelog server runs as.
pub const FINELOG_USER: &str = "arbiter-finelog";

/// The user local pipeline trials (code from a branch) run as.
pub const TRIAL_USER: &str = "arbiter-trial";

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
        // No capability can come back through the bounding set (an error past the last one is expected).
        for cap in 0..64 {
            libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0);
        }
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

/// System calls a benchmark never needs, refused with EPERM by [`confine`]: mounting, namespaces,
/// kernel modules and keyrings, tracing other processes, BPF and perf, clocks, swap, reboot.
const DENIED: &[libc::c_long] = &[
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_fsopen,
    libc::SYS_fsmount,
    libc::SYS_fsconfig,
    libc::SYS_fspick,
    libc::SYS_mount_setattr,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_userfaultfd,
    libc::SYS_open_by_handle_at,
    libc::SYS_name_to_handle_at,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_reboot,
    libc::SYS_acct,
    libc::SYS_quotactl,
    libc::SYS_syslog,
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_clock_adjtime,
    libc::SYS_adjtimex,
    libc::SYS_iopl,
    libc::SYS_ioperm,
    libc::SYS_lookup_dcookie,
    libc::SYS_fanotify_init,
];

/// `clone` flags that make a namespace: refused like `unshare`.
const NAMESPACE_FLAGS: u32 = (libc::CLONE_NEWNS
    | libc::CLONE_NEWUSER
    | libc::CLONE_NEWNET
    | libc::CLONE_NEWPID
    | libc::CLONE_NEWIPC
    | libc::CLONE_NEWUTS
    | libc::CLONE_NEWCGROUP) as u32;

/// The seccomp filter [`confine`] installs (classic BPF; x86_64 only, anything else is refused).
fn filter() -> Vec<libc::sock_filter> {
    const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
    const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
    const JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
    const JSET_K: u16 = (libc::BPF_JMP | libc::BPF_JSET | libc::BPF_K) as u16;
    const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
    const AUDIT_ARCH_X86_64: u32 = 0xC000_003E;
    let stmt = |code: u16, k: u32| libc::sock_filter { code, jt: 0, jf: 0, k };
    let jump = |code: u16, k: u32, jt: u8, jf: u8| libc::sock_filter { code, jt, jf, k };
    let errno = |e: i32| libc::SECCOMP_RET_ERRNO | (e as u32 & libc::SECCOMP_RET_DATA);
    // seccomp_data: nr at 0, arch at 4, args[0] at 16 (its low 32 bits on little-endian).
    let mut prog = vec![
        stmt(LD_W_ABS, 4),
        jump(JEQ_K, AUDIT_ARCH_X86_64, 1, 0),
        stmt(RET_K, libc::SECCOMP_RET_KILL_PROCESS),
        stmt(LD_W_ABS, 0),
        // The x32 ABI's numbers: refused.
        jump(JGE_K, 0x4000_0000, 0, 1),
        stmt(RET_K, errno(libc::EPERM)),
    ];
    // Each denied call jumps to the shared EPERM at the end: after the list come clone3, clone and its
    // check (5 instructions) and the allow, then EPERM.
    let n = DENIED.len();
    for (i, nr) in DENIED.iter().enumerate() {
        let to_eperm = (n - 1 - i) + 6;
        prog.push(jump(JEQ_K, *nr as u32, to_eperm as u8, 0));
    }
    prog.extend([
        // clone3 takes its flags through a pointer seccomp cannot read: ENOSYS makes libc use clone.
        jump(JEQ_K, libc::SYS_clone3 as u32, 0, 1),
        stmt(RET_K, errno(libc::ENOSYS)),
        jump(JEQ_K, libc::SYS_clone as u32, 0, 2),
        stmt(LD_W_ABS, 16),
        jump(JSET_K, NAMESPACE_FLAGS, 1, 0),
        stmt(RET_K, libc::SECCOMP_RET_ALLOW),
        stmt(RET_K, errno(libc::EPERM)),
    ]);
    prog
}

/// Installs the seccomp filter on this thread (and what it starts from now on). Needs no_new_privs
/// (set by [`drop_to`]) or root.
pub fn confine() -> Result<(), String> {
    let prog = filter();
    let fprog = libc::sock_fprog { len: prog.len() as u16, filter: prog.as_ptr() as *mut libc::sock_filter };
    // SAFETY: prctl(2) reads `fprog` and the program it points to, both alive for this call.
    let rc = unsafe { libc::prctl(libc::PR_SET_SECCOMP, libc::SECCOMP_MODE_FILTER, &fprog as *const libc::sock_fprog, 0, 0) };
    if rc != 0 {
        return Err(format!("cannot install the seccomp filter: {}", std::io::Error::last_os_error()));
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

    /// In a child process: no_new_privs and the filter, then what a benchmark does works and what it never
    /// needs is refused.
    #[test]
    fn the_filter_refuses_namespaces_and_mounts_and_allows_the_rest() {
        // SAFETY: fork(2) in a test; the child only makes syscalls and exits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            let code = unsafe {
                libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                if confine().is_err() {
                    libc::_exit(10);
                }
                let refused = |rc: libc::c_long| rc == -1 && *libc::__errno_location() == libc::EPERM;
                if !refused(libc::syscall(libc::SYS_unshare, libc::CLONE_NEWUSER)) {
                    libc::_exit(11);
                }
                if !refused(libc::syscall(libc::SYS_mount, c"none".as_ptr(), c"/tmp".as_ptr(), c"tmpfs".as_ptr(), 0, 0)) {
                    libc::_exit(12);
                }
                if !refused(libc::syscall(libc::SYS_ptrace, 0, 0, 0, 0)) {
                    libc::_exit(13);
                }
                // A plain fork (clone without namespace flags) and ordinary calls still work.
                let child = libc::fork();
                if child == 0 {
                    libc::_exit(0);
                }
                let mut status = 0;
                if child < 0 || libc::waitpid(child, &mut status, 0) != child || libc::getpid() <= 0 {
                    libc::_exit(14);
                }
                0
            };
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(libc::WIFEXITED(status), "the child died: {status}");
        assert_eq!(libc::WEXITSTATUS(status), 0, "10: no filter, 11: unshare, 12: mount, 13: ptrace, 14: fork");
    }
}
