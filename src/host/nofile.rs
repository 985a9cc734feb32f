//! The host's open-file limit: raised from the soft limit to the hard one when
//! `--listen` starts.
//!
//! Why: every HTTP connection (a long-poll waiter, an event stream) holds a descriptor,
//! and so do the store, the inbox watcher and the directory listings of the file loop.
//! The common default soft limit is 1024: a thousand waiters put the process past it,
//! and then the *file loop* fails to list the inbox (EMFILE), so agents' files wait
//! while idle connections are held. The hard limit is what the administrator allows;
//! raising the soft one up to it needs no privilege (what Go's runtime and most servers
//! do at start).

/// The soft limit to set, given the current soft and hard limits: the hard one when it
/// is higher, else nothing to do.
pub fn target(soft: libc::rlim_t, hard: libc::rlim_t) -> Option<libc::rlim_t> {
    (soft < hard).then_some(hard)
}

/// Raise this process's soft `RLIMIT_NOFILE` to its hard limit, logging the change (or
/// why it could not be made: the host still runs, with the lower limit).
pub fn raise() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        let e = std::io::Error::last_os_error();
        tracing::warn!(error = %e, "cannot read the open-file limit");
        return;
    }
    let (soft, hard) = (lim.rlim_cur, lim.rlim_max);
    let Some(to) = target(soft, hard) else {
        tracing::debug!(soft, hard, "open-file limit already at its hard limit");
        return;
    };
    lim.rlim_cur = to;
    // SAFETY: setrlimit reads the struct we own; only the soft limit changes.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) } != 0 {
        let e = std::io::Error::last_os_error();
        tracing::warn!(error = %e, soft, hard, "cannot raise the open-file limit; connections may run out of descriptors");
        return;
    }
    tracing::info!(
        from = soft,
        to,
        "raised the open-file limit to the hard limit"
    );
}

#[cfg(test)]
mod tests {
    use super::target;

    #[test]
    fn the_soft_limit_goes_up_to_the_hard_one_never_down() {
        assert_eq!(target(1024, 524_288), Some(524_288));
        assert_eq!(target(4096, 4096), None);
        assert_eq!(target(libc::RLIM_INFINITY, libc::RLIM_INFINITY), None);
        assert_eq!(target(1024, libc::RLIM_INFINITY), Some(libc::RLIM_INFINITY));
    }
}
