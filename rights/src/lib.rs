//! Who may do what, decided in one place: the roles (viewer < launcher < admin), the caller of a request
//! ([`Principal`]: anonymous, a signed-in user, or someone holding share links), the signed-in user a
//! route's rule has already checked ([`Actor`]), and the rule of each act on an experiment or bisection
//! ([`Principal::may`]). No IO: the server's route layer and handlers, the pages (which buttons to show)
//! and the browser bundle all read these same functions.

use serde::{Deserialize, Serialize};
use std::str::FromStr;

/// A user's role; each includes the ones below it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Viewer,
    Launcher,
    Admin,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Launcher => "launcher",
            Role::Admin => "admin",
        }
    }
}

/// A role name that is none of viewer, launcher or admin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownRole(pub String);

impl std::fmt::Display for UnknownRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown role {:?}; expected viewer, launcher or admin", self.0)
    }
}

impl std::error::Error for UnknownRole {}

impl FromStr for Role {
    type Err = UnknownRole;
    fn from_str(s: &str) -> Result<Self, UnknownRole> {
        match s {
            "viewer" => Ok(Role::Viewer),
            "launcher" => Ok(Role::Launcher),
            "admin" => Ok(Role::Admin),
            other => Err(UnknownRole(other.to_string())),
        }
    }
}

/// How a signed-in principal proved who it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Via {
    Session,
    ApiToken(i64),
}

/// The caller of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    Anonymous,
    /// A user, through a browser session or an API token; `role` is the token's when it is narrower.
    User {
        id: i64,
        name: String,
        role: Role,
        via: Via,
    },
    /// Someone holding share links: read access to these experiments and bisections and nothing else;
    /// the experiments' logs and other files only for those in `files` (links made with that scope). A
    /// bisection's link opens its steps' experiments too (they are in `experiments`, never in `files`).
    Share {
        experiments: Vec<i64>,
        files: Vec<i64>,
        bisections: Vec<i64>,
    },
}

impl Principal {
    /// The role of a signed-in user; `None` for anonymous and share-link callers.
    pub fn role(&self) -> Option<Role> {
        match self {
            Principal::User { role, .. } => Some(*role),
            _ => None,
        }
    }

    pub fn user_id(&self) -> Option<i64> {
        match self {
            Principal::User { id, .. } => Some(*id),
            _ => None,
        }
    }

    /// At least `role` (viewer < launcher < admin).
    pub fn has(&self, role: Role) -> bool {
        self.role().is_some_and(|r| r >= role)
    }

    /// Any signed-in user reads every experiment; a share link reads its own.
    pub fn can_read_experiment(&self, id: i64) -> bool {
        match self {
            Principal::Anonymous => false,
            Principal::User { .. } => true,
            Principal::Share { experiments, .. } => experiments.contains(&id),
        }
    }

    /// Any signed-in user reads every bisection; a share link reads the one it was made for.
    pub fn can_read_bisection(&self, id: i64) -> bool {
        match self {
            Principal::Anonymous => false,
            Principal::User { .. } => true,
            Principal::Share { bisections, .. } => bisections.contains(&id),
        }
    }

    /// The trial logs and other files of experiment `id` (its reports are part of reading it): any
    /// signed-in user, or a share link made with the files scope.
    pub fn can_read_files(&self, id: i64) -> bool {
        match self {
            Principal::Anonymous => false,
            Principal::User { .. } => true,
            Principal::Share { files, .. } => files.contains(&id),
        }
    }

    /// Whether this principal may read file `path` (relative) of experiment `id`, or why not: its
    /// reports (`reports/…`) go with the page; logs and other files need a signed-in user or a share
    /// link made with the files scope; a warp phase's saved server environment (`*.server.env`, keys
    /// redacted) needs a launcher. The download route enforces it; the page lists only what it allows.
    pub fn may_read_file(&self, id: i64, path: &str) -> Result<(), String> {
        if !self.can_read_experiment(id) {
            return Err(format!("experiment {id} is not readable with these credentials"));
        }
        if path.ends_with(".server.env") && !self.has(Role::Launcher) {
            return Err("a phase's server environment is shown to launchers only".into());
        }
        if !path.starts_with("reports/") && !self.can_read_files(id) {
            return Err("this share link opens the page and its reports; logs and other files need a link made with files".into());
        }
        Ok(())
    }
}

/// Something a signed-in user may do to one experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExperimentAct {
    Cancel,
    Share,
    Rerun,
    Rejudge,
    /// Cancel a bisection (`id` is the bisection's): its launcher or an admin, like an experiment.
    CancelBisection,
    /// Make or revoke a bisection's share links: its launcher or an admin.
    ShareBisection,
    /// Start a bisection (from an experiment's page or the trends page): any launcher.
    Bisect,
}

/// Why a principal may not act on an experiment: not signed in (401), or not allowed (403).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    Unauthorized(String),
    Forbidden(String),
}

impl Principal {
    /// Who may do what to experiment `id`, launched by `owner`: the one rule the API's handlers
    /// enforce and the experiment page reads to show its buttons. Cancelling and sharing belong to
    /// its launcher (with the launcher role still) and to admins; re-running and re-judging to any
    /// launcher. Whether the experiment's state allows the act (ended, imported, an old method) is
    /// the caller's second question. Returns the acting user's id.
    pub fn may(&self, act: ExperimentAct, id: i64, owner: Option<i64>) -> Result<i64, Refused> {
        match self {
            Principal::User { id: me, role, .. } => may_as(*me, *role, act, id, owner),
            _ => Err(Refused::Unauthorized("sign in or send `Authorization: Bearer <API token>`".into())),
        }
    }
}

/// The rule of [`Principal::may`] for a signed-in user `me` acting with `role`.
fn may_as(me: i64, role: Role, act: ExperimentAct, id: i64, owner: Option<i64>) -> Result<i64, Refused> {
    if role < Role::Launcher {
        return Err(Refused::Forbidden(format!("this needs the launcher role; you act as {}", role.as_str())));
    }
    let (own_only, verb, what) = match act {
        ExperimentAct::Cancel => (true, "cancel", "experiment"),
        ExperimentAct::Share => (true, "share", "experiment"),
        ExperimentAct::Rerun => (false, "re-run", "experiment"),
        ExperimentAct::Rejudge => (true, "re-judge", "experiment"),
        ExperimentAct::CancelBisection => (true, "cancel", "bisection"),
        ExperimentAct::ShareBisection => (true, "share", "bisection"),
        ExperimentAct::Bisect => (false, "bisect", "experiment"),
    };
    if own_only && role != Role::Admin && owner != Some(me) {
        return Err(Refused::Forbidden(format!("only {what} {id}'s launcher or an admin may {verb} it")));
    }
    Ok(me)
}

/// A signed-in user whose role the route's rule has checked (`server/src/auth/policy.rs` puts one on every
/// request a user makes): a handler takes it instead of asking the principal again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    pub id: i64,
    pub name: String,
    /// The role it acts with (an API token's when narrower than its user's).
    pub role: Role,
    pub via: Via,
}

impl Principal {
    /// The signed-in user behind this principal, if any.
    pub fn actor(&self) -> Option<Actor> {
        match self {
            Principal::User { id, name, role, via } => Some(Actor { id: *id, name: name.clone(), role: *role, via: *via }),
            _ => None,
        }
    }

    /// The signed-in user, if it has at least `role`; otherwise why not (401 without one, 403 below it).
    pub fn at_least(&self, role: Role) -> Result<Actor, Refused> {
        match self.actor() {
            Some(a) if a.role >= role => Ok(a),
            Some(a) => Err(Refused::Forbidden(format!("this needs the {} role; you act as {}", role.as_str(), a.role.as_str()))),
            None => Err(Refused::Unauthorized("sign in or send `Authorization: Bearer <API token>`".into())),
        }
    }
}

impl Actor {
    /// At least `role` (viewer < launcher < admin).
    pub fn has(&self, role: Role) -> bool {
        self.role >= role
    }

    /// [`Principal::may`] for a user the route has already let in.
    pub fn may(&self, act: ExperimentAct, id: i64, owner: Option<i64>) -> Result<i64, Refused> {
        may_as(self.id, self.role, act, id, owner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancelling_sharing_and_rejudging_are_the_launchers_and_admins_rerunning_any_launchers() {
        let user = |id, role| Principal::User { id, name: format!("u{id}"), role, via: Via::Session };
        let (owner, other, admin, viewer) = (user(1, Role::Launcher), user(2, Role::Launcher), user(3, Role::Admin), user(4, Role::Viewer));
        for act in [ExperimentAct::Cancel, ExperimentAct::Share, ExperimentAct::Rejudge] {
            assert_eq!(owner.may(act, 9, Some(1)), Ok(1));
            assert_eq!(admin.may(act, 9, Some(1)), Ok(3));
            assert!(
                matches!(other.may(act, 9, Some(1)), Err(Refused::Forbidden(m)) if m.contains("only experiment 9's launcher or an admin"))
            );
        }
        assert_eq!(other.may(ExperimentAct::Rerun, 9, Some(1)), Ok(2));
        // An experiment no one launched (imported by nobody): an admin's to re-judge.
        assert!(other.may(ExperimentAct::Rejudge, 9, None).is_err());
        assert_eq!(admin.may(ExperimentAct::Rejudge, 9, None), Ok(3));
        assert!(matches!(viewer.may(ExperimentAct::Rerun, 9, Some(4)), Err(Refused::Forbidden(_))), "a viewer, even its launcher once");
        assert!(matches!(
            Principal::Share { experiments: vec![9], files: vec![], bisections: vec![] }.may(ExperimentAct::Share, 9, None),
            Err(Refused::Unauthorized(_))
        ));
        assert!(matches!(Principal::Anonymous.may(ExperimentAct::Cancel, 9, None), Err(Refused::Unauthorized(_))));
        assert!(matches!(other.may(ExperimentAct::ShareBisection, 5, Some(1)), Err(Refused::Forbidden(m)) if m.contains("bisection 5")));
        assert_eq!(owner.may(ExperimentAct::ShareBisection, 5, Some(1)), Ok(1));
        // A bisection's link reads the bisection and its steps, nothing else.
        let link = Principal::Share { experiments: vec![7], files: vec![], bisections: vec![5] };
        assert!(link.can_read_bisection(5) && !link.can_read_bisection(6) && link.can_read_experiment(7) && !link.can_read_files(7));
    }
}
