//! The system calls that need `unsafe`: the only module allowed it (the crate denies
//! `unsafe_code` everywhere else, and `tests/it/sys.rs` checks the source).
//!
//! Every other call into the kernel goes through `rustix`, whose safe functions take
//! owned or borrowed descriptors and return typed errors (`flock`, `syncfs`, `poll`, the
//! terminal's modes, `getrlimit`, `kill`, `umask`, `geteuid`, `uname`). What remains here
//! is what rustix does not offer safely: a signal's disposition, the allocator's trim,
//! and a hook that runs in a child between `fork` and `exec`. Each block says why it is
//! sound. Beside them, the one process check two modules make ([`process_exists`]).

#![allow(unsafe_code)]

use std::process::Command;

/// Restore SIGPIPE's default action, so the process ends when it writes to a pipe nobody
/// reads (Rust starts programs with SIGPIPE ignored). Call it before any thread starts.
pub fn default_sigpipe() {
    // SAFETY: setting a signal's disposition to SIG_DFL installs no handler and has no
    // preconditions; it runs in `main` before any other thread exists.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Give the heap's free memory back to the system (glibc keeps freed memory of large
/// batches mapped otherwise, and the daemon would sit at its peak forever). Does nothing
/// where the allocator is not glibc's.
pub fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free heap memory; it has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Start the child `command` spawns in a session of its own (`setsid`), detached from
/// this process's terminal: closing the terminal, or a signal to its process group, does
/// not reach it.
pub fn in_new_session(command: &mut Command) -> &mut Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: the hook runs in the child between fork and exec, where only
    // async-signal-safe calls are allowed: setsid(2) is one, and the hook allocates
    // nothing and takes no lock. It cannot fail in a child that is not a group leader
    // (a new child never is), so its result is not needed.
    unsafe {
        command.pre_exec(|| {
            let _ = rustix::process::setsid();
            Ok(())
        })
    }
}

/// Whether process `pid` exists (`kill(pid, 0)`; a process of another user, which may
/// not be signalled, exists too).
pub fn process_exists(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    else {
        return false;
    };
    match rustix::process::test_kill_process(pid) {
        Ok(()) => true,
        Err(e) => e == rustix::io::Errno::PERM,
    }
}
