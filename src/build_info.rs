//! What this binary is: version, commit, compiler, target, profile (set by `build.rs`) and the
//! name of its Redis function library.
//! `baton version` prints it; the `baton_build_info` gauge carries it as labels.

use serde::Serialize;

/// The build of this binary.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct BuildInfo {
    pub version: &'static str,
    pub commit: &'static str,
    pub rustc: &'static str,
    pub target: &'static str,
    pub profile: &'static str,
    /// The Redis function library of its scripts (`baton_<hash>`).
    pub scripts: &'static str,
}

/// This binary's build.
pub const BUILD: BuildInfo = BuildInfo {
    version: env!("CARGO_PKG_VERSION"),
    commit: env!("BATON_BUILD_COMMIT"),
    rustc: env!("BATON_BUILD_RUSTC"),
    target: env!("BATON_BUILD_TARGET"),
    profile: env!("BATON_BUILD_PROFILE"),
    scripts: env!("BATON_SCRIPTS_LIBRARY"),
};

impl BuildInfo {
    /// The label pairs of `baton_build_info`.
    pub fn labels(&self) -> [(&'static str, String); 6] {
        [
            ("version", self.version.into()),
            ("commit", self.commit.into()),
            ("rustc", self.rustc.into()),
            ("target", self.target.into()),
            ("profile", self.profile.into()),
            ("scripts", self.scripts.into()),
        ]
    }
}

impl std::fmt::Display for BuildInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "baton {}", self.version)?;
        writeln!(f, "commit:  {}", self.commit)?;
        writeln!(f, "rustc:   {}", self.rustc)?;
        writeln!(f, "target:  {}", self.target)?;
        writeln!(f, "profile: {}", self.profile)?;
        write!(f, "scripts: {}", self.scripts)
    }
}
