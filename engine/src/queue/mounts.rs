//! The mounts that cap what a sandboxed trial may write (root only; `serve` as another user has no
//! mounts and relies on the per-file limit, `RLIMIT_FSIZE`):
//!
//! * its **scratch** folder (`HOME`, `TMPDIR`, `{data_dir}`) is a sized tmpfs ([`size_scratch`]);
//! * its arm's **worktree** is an overlay ([`cap_worktree`]): the checkout below, read as it is, and
//!   every write above it in a sized file system of its own. The cap is over all of the arm's trials
//!   (they share the worktree, so a build's or byte-compiler's output carries from one trial to the
//!   next, as without the overlay); a write past it fails with `ENOSPC`, which the trial's outcome
//!   names `limit: disk`. The writes sit on disk — an ext4 image, sparse, in the data dir, mounted
//!   through a loop device — where the host gives `mkfs.ext4` and a loop device ([`Backing::Disk`]),
//!   else in a tmpfs ([`Backing::Memory`]).
//!
//! tmpfs pages are memory: what a trial writes to its scratch (or to a tmpfs-backed worktree) counts
//! in its memory group too.
//!
//! Invariant: a mount made here is taken off by the same module ([`unmount`] for the scratch,
//! [`uncap_worktree`]) before the folder under it is deleted — deleting through a live overlay would
//! write whiteouts instead of removing the checkout.

use std::ffi::CString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::queue::host_user::HostUser;

fn c_path(path: &Path) -> Result<CString, String> {
    CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| format!("{}: a path with a NUL byte", path.display()))
}

fn mount(kind: &std::ffi::CStr, target: &Path, options: &str) -> Result<(), String> {
    let target = c_path(target)?;
    let options = CString::new(options).map_err(|e| e.to_string())?;
    // SAFETY: mount(2) with NUL-terminated strings that live for this call.
    let rc =
        unsafe { libc::mount(kind.as_ptr(), target.as_ptr(), kind.as_ptr(), libc::MS_NOSUID | libc::MS_NODEV, options.as_ptr().cast()) };
    match rc {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error().to_string()),
    }
}

/// Detaches whatever is mounted on `path`, if anything.
pub fn unmount(path: &Path) {
    if let Ok(c) = c_path(path) {
        // SAFETY: umount2(2) on a NUL-terminated path; an error (nothing mounted) is ignored.
        unsafe {
            libc::umount2(c.as_ptr(), libc::MNT_DETACH);
        }
    }
}

/// Detaches everything mounted at or below `dir`, deepest first (a data dir being thrown away with trials
/// still running: their scratch and worktree mounts). Nothing for a user that may not unmount.
pub fn unmount_beneath(dir: &Path) {
    let Ok(table) = std::fs::read_to_string("/proc/self/mounts") else { return };
    // Mount points are written with \040 for a space (and \011, \012, \134); data dirs here have none.
    let mut points: Vec<PathBuf> =
        table.lines().filter_map(|l| l.split(' ').nth(1)).map(PathBuf::from).filter(|p| p.starts_with(dir)).collect();
    points.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    for p in points {
        unmount(&p);
    }
}

/// Whether something is mounted on `dir` (its device differs from its parent's).
pub fn is_mount_point(dir: &Path) -> bool {
    let parent = dir.parent().unwrap_or(dir);
    match (std::fs::symlink_metadata(dir), std::fs::symlink_metadata(parent)) {
        (Ok(d), Ok(p)) => d.dev() != p.dev(),
        _ => false,
    }
}

/// Puts a tmpfs of at most `bytes` on a trial's scratch folder, owned by `user`: what the trial writes
/// to its `HOME` and `TMPDIR` is capped. Taken off by `sandbox::remove_scratch`.
pub fn size_scratch(home: &Path, bytes: u64, user: &HostUser) -> Result<(), String> {
    mount(c"tmpfs", home, &format!("size={bytes},mode=0700,uid={},gid={}", user.uid, user.gid))
        .map_err(|e| format!("cannot size the scratch folder {}: {e}", home.display()))
}

/// Where the writes above an arm's worktree live: `data-dir/sandbox/worktree-{experiment}-{arm}`
/// (under the data dir, which the sandbox hides: the trial sees only the merged worktree).
pub fn upper_dir(data_dir: &Path, worktree: &Path) -> PathBuf {
    let name = worktree.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    data_dir.join("sandbox").join(format!("worktree-{name}"))
}

/// What holds the writes above a capped worktree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backing {
    /// An ext4 image in the data dir, through a loop device: disk, allocated as written.
    Disk,
    /// A tmpfs: memory (the host gave no `mkfs.ext4` or no loop device).
    Memory,
}

/// Caps what the trials of an arm may write in its worktree at `bytes` in all: an overlay on the
/// worktree's own path (the checkout as its lower layer, the writes in a file system of `bytes` of
/// their own, owned by `user`). Done once per worktree: a worktree that already is a mount point is
/// left as it is (`None`); else the backing used.
pub fn cap_worktree(data_dir: &Path, worktree: &Path, bytes: u64, user: &HostUser) -> Result<Option<Backing>, String> {
    cap_worktree_on(data_dir, worktree, bytes, user, true)
}

/// [`cap_worktree`] from async code: `mkfs.ext4` and `mount` are blocking processes (tens of
/// milliseconds), run on the blocking pool rather than an async runtime thread.
pub async fn cap_worktree_off_runtime(data_dir: &Path, worktree: &Path, bytes: u64, user: &HostUser) -> Result<Option<Backing>, String> {
    let shown = worktree.display().to_string();
    let (data_dir, worktree, user) = (data_dir.to_path_buf(), worktree.to_path_buf(), user.clone());
    tokio::task::spawn_blocking(move || cap_worktree(&data_dir, &worktree, bytes, &user))
        .await
        .map_err(|e| format!("cannot cap the worktree {shown}: {e}"))?
}

fn cap_worktree_on(data_dir: &Path, worktree: &Path, bytes: u64, user: &HostUser, disk: bool) -> Result<Option<Backing>, String> {
    if is_mount_point(worktree) {
        return Ok(None);
    }
    let upper = upper_dir(data_dir, worktree);
    let image = image_path(&upper);
    unmount(&upper);
    let _ = std::fs::remove_dir_all(&upper);
    let _ = std::fs::remove_file(&image);
    std::fs::create_dir_all(&upper).map_err(|e| format!("{}: {e}", upper.display()))?;
    let fail = |e: String| format!("cannot cap the worktree {}: {e}", worktree.display());
    let backing = match disk.then(|| mount_image(&image, &upper, bytes)) {
        Some(Ok(())) => Backing::Disk,
        _ => {
            let _ = std::fs::remove_file(&image);
            // The overlay's own bookkeeping (work/) shares the tmpfs: a few KiB on top of the cap.
            mount(c"tmpfs", &upper, &format!("size={},mode=0700", bytes + (1 << 20))).map_err(fail)?;
            Backing::Memory
        }
    };
    let made = (|| {
        for (sub, owner) in [("upper", Some(user)), ("work", None)] {
            let dir = upper.join(sub);
            std::fs::create_dir(&dir).map_err(|e| e.to_string())?;
            if let Some(u) = owner {
                std::os::unix::fs::chown(&dir, Some(u.uid), Some(u.gid)).map_err(|e| e.to_string())?;
                let mode = std::fs::metadata(worktree).map(|m| m.mode() & 0o7777).unwrap_or(0o755);
                std::fs::set_permissions(&dir, std::os::unix::fs::PermissionsExt::from_mode(mode)).map_err(|e| e.to_string())?;
            }
        }
        let options =
            format!("lowerdir={},upperdir={},workdir={}", escape(worktree)?, escape(&upper.join("upper"))?, escape(&upper.join("work"))?);
        mount(c"overlay", worktree, &options)
    })();
    if let Err(e) = made {
        unmount(&upper);
        let _ = std::fs::remove_dir_all(&upper);
        let _ = std::fs::remove_file(&image);
        return Err(fail(e));
    }
    Ok(Some(backing))
}

fn image_path(upper: &Path) -> PathBuf {
    upper.with_extension("img")
}

/// A host tool by name, from the system folders first (a root service's `PATH` may lack them).
fn system_tool(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    ["/usr/sbin", "/sbin"].iter().map(PathBuf::from).chain(std::env::split_paths(&path)).map(|d| d.join(name)).find(|p| p.is_file())
}

/// A sparse ext4 image of about `bytes` usable, made and mounted on `dir` through a loop device
/// (`mount -o loop` sets the device to free itself when the mount goes). Argv only; the paths are
/// Arbiter's own.
fn mount_image(image: &Path, dir: &Path, bytes: u64) -> Result<(), String> {
    let (mkfs, mount) = (system_tool("mkfs.ext4").ok_or("no mkfs.ext4")?, system_tool("mount").ok_or("no mount")?);
    // No journal, no reserved blocks, an inode per 16 KiB: the file system's own tables take 1.5–2.5 %
    // of the image; what stays for files is the cap within about 2 % (measured from 4 MiB to 8 GiB).
    let size = bytes + bytes / 40 + (256 << 10);
    std::fs::File::create_new(image).and_then(|f| f.set_len(size)).map_err(|e| format!("{}: {e}", image.display()))?;
    let run = |program: &Path, args: &[&std::ffi::OsStr]| -> Result<(), String> {
        let out = std::process::Command::new(program).args(args).stdin(std::process::Stdio::null()).output().map_err(|e| e.to_string())?;
        match out.status.success() {
            true => Ok(()),
            false => Err(format!("{}: {}", program.display(), String::from_utf8_lossy(&out.stderr).trim())),
        }
    };
    let flags = ["-q", "-F", "-m", "0", "-i", "16384", "-O", "^has_journal,^resize_inode", "-E", "lazy_itable_init=1,lazy_journal_init=1"];
    let args: Vec<&std::ffi::OsStr> = flags.iter().map(std::ffi::OsStr::new).chain([image.as_os_str()]).collect();
    run(&mkfs, &args)?;
    run(
        &mount,
        &["-o", "loop,nosuid,nodev"].map(std::ffi::OsStr::new).into_iter().chain([image.as_os_str(), dir.as_os_str()]).collect::<Vec<_>>(),
    )
}

/// Takes an arm's worktree overlay and what backs it off (the checkout below is then deleted as
/// before).
pub fn uncap_worktree(data_dir: &Path, worktree: &Path) {
    let upper = upper_dir(data_dir, worktree);
    if is_mount_point(worktree) && upper.exists() {
        unmount(worktree);
    }
    if upper.exists() {
        unmount(&upper);
        let _ = std::fs::remove_dir_all(&upper);
    }
    let _ = std::fs::remove_file(image_path(&upper));
}

/// A path as an overlay option value: `,` `:` and `\` are the option syntax's own and are escaped.
fn escape(path: &Path) -> Result<String, String> {
    let s = path.to_str().ok_or_else(|| format!("{}: not UTF-8", path.display()))?;
    Ok(s.replace('\\', "\\\\").replace(',', "\\,").replace(':', "\\:"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_values_are_escaped() {
        assert_eq!(escape(Path::new("/srv/a,b:c\\d")).unwrap(), "/srv/a\\,b\\:c\\\\d");
    }

    /// Root only (the test is skipped, saying so, elsewhere): the writes above a capped worktree stop
    /// at the cap, the checkout below is untouched, and uncapping leaves the checkout as it was.
    #[test]
    fn a_capped_worktree_stops_writes_at_its_cap_and_keeps_its_checkout() {
        for disk in [true, false] {
            capped_worktree_on(disk);
        }
    }

    /// Both backings: on disk where the host can (it says so when it cannot), in memory always.
    fn capped_worktree_on(disk: bool) {
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipped: mounts need root");
            return;
        }
        let dir = std::env::temp_dir().join(format!("arbiter-mounts-{}-{disk}", std::process::id()));
        let data = dir.as_path();
        let worktree = data.join("worktrees").join("7-control");
        std::fs::create_dir_all(&worktree).unwrap();
        std::fs::write(worktree.join("bench.py"), "print(1)\n").unwrap();
        let me = HostUser { name: "root".into(), uid: 0, gid: 0 };
        let cap = 4 << 20;
        let backing = cap_worktree_on(data, &worktree, cap, &me, disk).unwrap().unwrap();
        if disk && backing == Backing::Memory {
            eprintln!("this host cannot back a worktree on disk (no mkfs.ext4 or loop device): tmpfs used");
        }
        assert!(disk || backing == Backing::Memory);
        assert!(is_mount_point(&worktree));
        assert_eq!(cap_worktree_on(data, &worktree, cap, &me, disk).unwrap(), None, "capped once only");
        std::fs::write(worktree.join("bench.py"), "print(2)\n").unwrap();
        // Most of the cap can be written, in several files; past it, ENOSPC.
        std::fs::write(worktree.join("a.bin"), vec![1u8; 3 << 20]).unwrap();
        let big = std::fs::write(worktree.join("b.bin"), vec![0u8; 2 << 20]).unwrap_err();
        assert_eq!(big.raw_os_error(), Some(libc::ENOSPC), "{big}");
        uncap_worktree(data, &worktree);
        assert!(!is_mount_point(&worktree));
        assert_eq!(std::fs::read_to_string(worktree.join("bench.py")).unwrap(), "print(1)\n");
        assert!(!worktree.join("a.bin").exists());
        assert!(!upper_dir(data, &worktree).exists());
        assert!(!image_path(&upper_dir(data, &worktree)).exists());
        std::fs::remove_dir_all(data).unwrap();
    }
}
