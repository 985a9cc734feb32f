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

/// The soft limit to set, given the current soft and hard limits (`None`: unlimited): the
/// hard one when it is higher, else nothing to do.
pub fn target(soft: Option<u64>, hard: Option<u64>) -> Option<Option<u64>> {
    let higher = match (soft, hard) {
        (Some(s), Some(h)) => s < h,
        (Some(_), None) => true,
        (None, _) => false,
    };
    higher.then_some(hard)
}

/// Raise this process's soft `RLIMIT_NOFILE` to its hard limit, logging the change (or
/// why it could not be made: the host still runs, with the lower limit).
pub fn raise() {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let Rlimit { current, maximum } = getrlimit(Resource::Nofile);
    let Some(to) = target(current, maximum) else {
        tracing::debug!(soft = ?current, hard = ?maximum, "open-file limit already at its hard limit");
        return;
    };
    let raised = Rlimit {
        current: to,
        maximum,
    };
    if let Err(e) = setrlimit(Resource::Nofile, raised) {
        let e = std::io::Error::from(e);
        tracing::warn!(error = %e, soft = ?current, hard = ?maximum, "cannot raise the open-file limit; connections may run out of descriptors");
        return;
    }
    tracing::info!(
        from = ?current,
        to = ?to,
        "raised the open-file limit to the hard limit"
    );
}

#[cfg(test)]
mod tests {
    use super::target;

    #[test]
    fn the_soft_limit_goes_up_to_the_hard_one_never_down() {
        assert_eq!(target(Some(1024), Some(524_288)), Some(Some(524_288)));
        assert_eq!(target(Some(4096), Some(4096)), None);
        assert_eq!(target(None, None), None);
        assert_eq!(target(Some(1024), None), Some(None));
    }
}
