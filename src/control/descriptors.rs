//! Raising the soft open-file limit to the hard one, so connections, sockets and the store are
//! not cut off at a default of 1,024 that the system would allow to be higher.

/// Raises RLIMIT_NOFILE's soft limit to its hard limit; returns the soft limit now in force.
pub fn raise_descriptor_limit() -> std::io::Result<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we pass and has no other effect.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if lim.rlim_cur >= lim.rlim_max
        || (lim.rlim_max == libc::RLIM_INFINITY && lim.rlim_cur >= 1 << 20)
    {
        return Ok(lim.rlim_cur);
    }
    // An unlimited hard limit is not a valid soft one for files; Linux's own ceiling is 2^20.
    let target = if lim.rlim_max == libc::RLIM_INFINITY {
        1 << 20
    } else {
        lim.rlim_max
    };
    let raised = libc::rlimit {
        rlim_cur: target,
        rlim_max: lim.rlim_max,
    };
    // SAFETY: setrlimit reads the struct we pass; raising the soft limit up to the hard one
    // needs no privilege.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(raised.rlim_cur)
}
