//! Who is asking. The server's authentication layer puts a [`Principal`] on every request; server
//! functions read it from context and ask it before they touch the store.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

/// What the page shows about the signed-in user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignedIn {
    pub name: String,
    /// viewer, launcher or admin.
    pub role: String,
}

#[cfg(feature = "ssr")]
pub use server_side::*;

#[cfg(feature = "ssr")]
mod server_side {
    use leptos::prelude::*;
    pub use store::people::Role;

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
            let Principal::User { id: me, role, .. } = self else {
                return Err(Refused::Unauthorized("sign in or send `Authorization: Bearer <API token>`".into()));
            };
            if *role < Role::Launcher {
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
            if own_only && *role != Role::Admin && owner != Some(*me) {
                return Err(Refused::Forbidden(format!("only {what} {id}'s launcher or an admin may {verb} it")));
            }
            Ok(*me)
        }
    }

    /// The caller of the current server function or page render.
    pub fn principal() -> Principal {
        use_context::<Principal>().unwrap_or(Principal::Anonymous)
    }

    /// Sets the HTTP status of the current response (a server function's or a page's).
    pub fn set_status(code: u16) {
        if let (Some(r), Ok(status)) = (use_context::<leptos_axum::ResponseOptions>(), http::StatusCode::from_u16(code)) {
            r.set_status(status);
        }
    }

    /// The caller, if it has at least `role`; otherwise an error the page shows (and 401/403).
    pub fn require(role: Role) -> Result<Principal, crate::error::AppError> {
        let p = principal();
        if p.has(role) {
            Ok(p)
        } else if p.role().is_some() {
            set_status(403);
            Err(crate::error::AppError::Forbidden(format!("this needs the {} role", role.as_str())))
        } else {
            set_status(401);
            Err(crate::error::AppError::Unauthorized("sign in first".into()))
        }
    }
}

/// The signed-in user, for the header; `None` for anonymous and share-link visitors.
#[server(prefix = "/fn", endpoint = "whoami")]
pub async fn whoami() -> Result<Option<SignedIn>, crate::error::AppError> {
    Ok(match principal() {
        Principal::User { name, role, .. } => Some(SignedIn { name, role: role.as_str().to_string() }),
        _ => None,
    })
}

#[cfg(all(test, feature = "ssr"))]
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
