//! The release artifacts, made by `contrib/release/build` from the binary this test build
//! has (`--binary`, so no second compile; `--fast` compression), and used as an operator
//! would, as far as this machine allows (no container engine runs here):
//!
//! - `archive_sums_and_sbom`: SHA256SUMS checks, the archive holds exactly the binary,
//!   README, LICENSE, man page and completions (the install guide's own commands unpack
//!   it), its binary says this source's version, and the SBOM lists the Rust dependencies
//!   of the binary (Cargo.lock's versions), not the dev-dependencies. The archive made
//!   twice is the same bytes; a binary of another version is refused.
//! - `the_image_is_its_containerfile_and_serves_from_its_root`: the image's config, read by
//!   skopeo, is what the Containerfile's last stage says (user, entrypoint, environment,
//!   health check, volume, port, labels with this version); unpacked by umoci, its root
//!   holds only the daemon's files; the entrypoint, run under the image's root as its user
//!   with its environment in a network namespace of its own, answers `/readyz`, passes the
//!   image's health check, takes a request dropped into the volume, and drains on SIGTERM.
//! - `the_compose_file_validates_and_its_audit_key_serves_two_hosts`: podman-compose reads
//!   the compose file (two dshq hosts on PostgreSQL, one audit key, health checks, own
//!   volumes, loopback ports) and resolves it for `up`; the secrets made by the install
//!   guide's commands are what dshq takes: the config file checks, and the audit key keys
//!   one PostgreSQL store from two roots whose logs verify.
//! - `the_debian_package_installs_runs_and_purges_on_debian_12`: on a fresh Debian 12 root
//!   (mmdebstrap), the package installs (apt, as the guide says), the unit verifies
//!   (`systemd-analyze verify`), the daemon runs as the unit's command line and user say,
//!   `apt remove` keeps the state root and `apt purge` removes it.

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;

use serde_json::Value;

use crate::helpers::*;
use crate::throwaway;

const VERSION: &str = env!("CARGO_PKG_VERSION");

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Run a command, failing the test (with its output) unless it exits 0.
fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stdout(cmd: &mut Command) -> String {
    String::from_utf8(run(cmd).stdout).unwrap()
}

/// A program the test drives, with the Debian package to install when it is missing.
fn need(program: &str, package: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .unwrap()
        .success();
    assert!(
        found,
        "{program} is missing: install Debian's {package} (contrib/test/run does)"
    );
}

/// The artifacts, made once for every test here.
struct Artifacts {
    _dir: tempfile::TempDir,
    out: PathBuf,
}

fn artifacts() -> &'static Artifacts {
    static MADE: OnceLock<Artifacts> = OnceLock::new();
    MADE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let started = std::time::Instant::now();
        run(Command::new("bash")
            .arg(repo().join("contrib/release/build"))
            .arg("--binary")
            .arg(bin())
            .arg("--fast")
            .arg("--out")
            .arg(&out));
        println!("contrib/release/build took {:?}", started.elapsed());
        Artifacts { _dir: dir, out }
    })
}

impl Artifacts {
    fn file(&self, name: &str) -> PathBuf {
        let p = self.out.join(name);
        assert!(p.is_file(), "the build made no {name}");
        p
    }
    fn image(&self) -> PathBuf {
        self.file(&format!("dshq-{VERSION}-image.tar"))
    }
    fn deb(&self) -> PathBuf {
        self.file(&format!("dshq_{VERSION}-1_amd64.deb"))
    }
}

/// The fenced block after `<!-- snippet: NAME -->` in the install guide.
fn snippet(name: &str) -> String {
    let text = fs::read_to_string(repo().join("docs/guide/install.md")).unwrap();
    let marker = format!("<!-- snippet: {name} -->");
    let at = text
        .find(&marker)
        .unwrap_or_else(|| panic!("docs/guide/install.md has no {marker}"));
    let rest = &text[at..];
    let open = rest.find("```").unwrap();
    let body = &rest[open..];
    let body = &body[body.find('\n').unwrap() + 1..];
    body[..body.find("```").unwrap()].to_string()
}

/// Run a guide snippet with bash -e in `dir`.
fn run_snippet(name: &str, dir: &Path) -> String {
    stdout(
        Command::new("bash")
            .args(["-euo", "pipefail", "-c", &snippet(name)])
            .current_dir(dir),
    )
}

fn files_under(dir: &Path) -> BTreeSet<String> {
    fn walk(base: &Path, dir: &Path, acc: &mut BTreeSet<String>) {
        for e in fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            let rel = p.strip_prefix(base).unwrap().to_string_lossy().into_owned();
            if e.file_type().unwrap().is_dir() {
                walk(base, &p, acc);
            } else {
                acc.insert(rel);
            }
        }
    }
    let mut acc = BTreeSet::new();
    walk(dir, dir, &mut acc);
    acc
}

#[test]
fn archive_sums_and_sbom() {
    let a = artifacts();
    run(Command::new("sha256sum")
        .args(["--check", "--strict", "SHA256SUMS"])
        .current_dir(&a.out));
    let sums = fs::read_to_string(a.out.join("SHA256SUMS")).unwrap();
    for name in [
        format!("dshq-{VERSION}-x86_64-linux-gnu.tar.gz"),
        format!("dshq-{VERSION}.cdx.json"),
        format!("dshq_{VERSION}-1_amd64.deb"),
        format!("dshq-{VERSION}-image.tar"),
    ] {
        assert!(
            sums.contains(&format!("  {name}\n")),
            "SHA256SUMS lacks {name}:\n{sums}"
        );
    }

    // The guide's commands: check the sums, unpack, run.
    let here = tempfile::tempdir().unwrap();
    for f in fs::read_dir(&a.out).unwrap() {
        let f = f.unwrap().path();
        fs::copy(&f, here.path().join(f.file_name().unwrap())).unwrap();
    }
    let said = run_snippet("archive", here.path());
    assert!(said.contains(&format!("dshq {VERSION}\n")), "{said}");
    let top = here.path().join(format!("dshq-{VERSION}-x86_64-linux-gnu"));
    let want: BTreeSet<String> = [
        "dshq",
        "README.md",
        "LICENSE",
        "man/dshq.1",
        "completions/dshq.bash",
        "completions/_dshq",
        "completions/dshq.fish",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(files_under(&top), want);
    let man = fs::read_to_string(top.join("man/dshq.1")).unwrap();
    assert!(man.starts_with(".ie") || man.contains(".TH dshq"), "{man}");
    assert!(fs::read_to_string(top.join("completions/dshq.bash"))
        .unwrap()
        .contains("_dshq()"));

    // The SBOM: CycloneDX, this crate at this version, the binary's dependencies at
    // Cargo.lock's versions, no dev-dependency.
    let sbom: Value =
        serde_json::from_slice(&fs::read(a.file(&format!("dshq-{VERSION}.cdx.json"))).unwrap())
            .unwrap();
    assert_eq!(sbom["bomFormat"], "CycloneDX");
    assert_eq!(sbom["metadata"]["component"]["name"], "dshq");
    assert_eq!(sbom["metadata"]["component"]["version"], VERSION);
    let lock = fs::read_to_string(repo().join("Cargo.lock")).unwrap();
    let components = sbom["components"].as_array().unwrap();
    let find = |name: &str| {
        components
            .iter()
            .find(|c| c["name"] == name)
            .map(|c| c["version"].as_str().unwrap().to_string())
    };
    for dep in ["rusqlite", "tokio", "postgres", "rustls", "axum", "rmcp"] {
        let v = find(dep).unwrap_or_else(|| panic!("the SBOM lacks {dep}"));
        assert!(
            lock.contains(&format!("name = \"{dep}\"\nversion = \"{v}\"")),
            "{dep} {v} is not Cargo.lock's"
        );
    }
    for dev in ["criterion", "proptest", "fantoccini", "rexpect"] {
        assert!(
            find(dev).is_none(),
            "the SBOM lists the dev-dependency {dev}"
        );
    }

    // One commit, one archive: made again, it is the same bytes.
    let again = here.path().join("again");
    run(Command::new("bash")
        .arg(repo().join("contrib/release/build"))
        .arg("--binary")
        .arg(bin())
        .args(["--fast", "--only", "archive", "--out"])
        .arg(&again));
    let name = format!("dshq-{VERSION}-x86_64-linux-gnu.tar.gz");
    assert!(
        fs::read(again.join(&name)).unwrap() == fs::read(a.out.join(&name)).unwrap(),
        "two builds of one commit made different archives"
    );

    // A binary of another version is refused, naming both.
    let fake = here.path().join("dshq-other");
    fs::write(&fake, "#!/bin/sh\necho 'dshq 9.9.9'\n").unwrap();
    fs::set_permissions(&fake, fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new("bash")
        .arg(repo().join("contrib/release/build"))
        .arg("--binary")
        .arg(&fake)
        .arg("--out")
        .arg(here.path().join("never"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("says 'dshq 9.9.9'") && err.contains(&format!("dshq {VERSION}")),
        "{err}"
    );
    assert!(!here.path().join("never").exists());
}

/// The Containerfile's last stage: each instruction (upper-case) with its arguments, the
/// line continuations joined.
fn containerfile_final_stage() -> Vec<(String, String)> {
    let text = fs::read_to_string(repo().join("contrib/release/Containerfile")).unwrap();
    let joined = text.replace("\\\n", " ");
    let lines: Vec<&str> = joined
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let from = lines.iter().rposition(|l| l.starts_with("FROM ")).unwrap();
    lines[from..]
        .iter()
        .map(|l| {
            let (k, v) = l.split_once(' ').unwrap();
            (k.to_string(), v.trim().to_string())
        })
        .collect()
}

/// `KEY="VALUE" KEY2=VALUE2` pairs of a LABEL or ENV line, `${VERSION}` replaced.
fn pairs(line: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = line.trim();
    while !rest.is_empty() {
        let (k, v) = rest.split_once('=').unwrap();
        let (value, next) = if let Some(q) = v.strip_prefix('"') {
            let end = q.find('"').unwrap();
            (&q[..end], &q[end + 1..])
        } else {
            v.split_once(char::is_whitespace).unwrap_or((v, ""))
        };
        out.push((k.trim().to_string(), value.replace("${VERSION}", VERSION)));
        rest = next.trim();
    }
    out
}

/// A network namespace of its own (loopback only), held by a sleeping process.
struct NetNs(Child);

impl NetNs {
    fn new() -> NetNs {
        let child = Command::new("unshare")
            .args([
                "--net",
                "--",
                "sh",
                "-c",
                "ip link set lo up && echo up && exec sleep 600",
            ])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut ns = NetNs(child);
        let mut line = String::new();
        use std::io::BufRead;
        std::io::BufReader::new(ns.0.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line, "up\n", "the network namespace did not come up");
        ns
    }
    fn path(&self) -> String {
        format!("--net=/proc/{}/ns/net", self.0.id())
    }
}

impl Drop for NetNs {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A command run in `ns`, under `root` as `uid:gid`, in `wd`, with exactly `env`.
fn contained(
    ns: &NetNs,
    root: &Path,
    wd: &str,
    (uid, gid): (u32, u32),
    env: &[(String, String)],
    argv: &[String],
) -> Command {
    let mut c = Command::new("nsenter");
    c.arg(ns.path())
        .arg(format!("--root={}", root.display()))
        .arg(format!(
            "--wd={}",
            root.join(wd.trim_start_matches('/')).display()
        ))
        .args(["-S", &uid.to_string(), "-G", &gid.to_string(), "--"])
        .args(argv)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)));
    c
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_image_is_its_containerfile_and_serves_from_its_root() {
    need("skopeo", "skopeo");
    need("umoci", "umoci");
    let a = artifacts();
    let archive = format!("docker-archive:{}", a.image().display());
    let config: Value = serde_json::from_str(&stdout(
        Command::new("skopeo").args(["inspect", "--config", "--raw", &archive]),
    ))
    .unwrap();
    let c = &config["config"];

    // The config is the Containerfile's last stage, instruction by instruction.
    let stage = containerfile_final_stage();
    assert_eq!(stage[0], ("FROM".into(), "scratch".into()));
    let env: Vec<String> = strings(&c["Env"]);
    let labels = &c["Labels"];
    let mut seen = BTreeSet::new();
    for (k, v) in &stage {
        seen.insert(k.clone());
        match k.as_str() {
            "FROM" | "ARG" | "COPY" => {}
            "USER" => assert_eq!(c["User"], v.as_str()),
            "WORKDIR" => assert_eq!(c["WorkingDir"], v.as_str()),
            "STOPSIGNAL" => assert_eq!(c["StopSignal"], v.as_str()),
            "EXPOSE" => assert!(c["ExposedPorts"].get(format!("{v}/tcp")).is_some(), "{c}"),
            "VOLUME" => {
                let want: Value = serde_json::from_str(v).unwrap();
                for vol in strings(&want) {
                    assert!(c["Volumes"].get(&vol).is_some(), "{c}");
                }
            }
            "ENTRYPOINT" => assert_eq!(c["Entrypoint"], serde_json::from_str::<Value>(v).unwrap()),
            "HEALTHCHECK" => {
                let cmd = &v[v.find("CMD ").unwrap() + 4..];
                let mut want = vec!["CMD".to_string()];
                want.extend(strings(&serde_json::from_str(cmd).unwrap()));
                assert_eq!(strings(&c["Healthcheck"]["Test"]), want);
                for (flag, key) in [("--interval=", "Interval"), ("--timeout=", "Timeout")] {
                    let secs: u64 = v[v.find(flag).unwrap() + flag.len()..]
                        .split('s')
                        .next()
                        .unwrap()
                        .parse()
                        .unwrap();
                    assert_eq!(c["Healthcheck"][key], secs * 1_000_000_000);
                }
            }
            "ENV" => {
                for (k, v) in pairs(v) {
                    assert!(env.contains(&format!("{k}={v}")), "{k}={v} not in {env:?}");
                }
            }
            "LABEL" => {
                for (k, v) in pairs(v) {
                    let got = labels[&k]
                        .as_str()
                        .unwrap_or_else(|| panic!("no label {k}"));
                    if v.contains("${") {
                        assert!(!got.is_empty() && !got.contains("${"), "{k}={got}");
                    } else {
                        assert_eq!(got, v, "label {k}");
                    }
                }
            }
            other => panic!("the test does not know the instruction {other}: compare it"),
        }
    }
    for k in [
        "USER",
        "ENTRYPOINT",
        "HEALTHCHECK",
        "VOLUME",
        "LABEL",
        "ENV",
    ] {
        assert!(
            seen.contains(k),
            "the Containerfile's last stage has no {k}"
        );
    }
    // What the issue asks of it, whatever the Containerfile says.
    assert_eq!(c["User"], "10001:10001");
    assert_eq!(strings(&c["Entrypoint"]), ["/usr/bin/dshq", "daemon"]);
    assert!(env.contains(&"DSHQ_ROOT=/var/lib/dshq".to_string()));
    assert!(env.iter().any(|e| e.starts_with("DSHQ_LISTEN=")));
    assert!(c["Volumes"].get("/var/lib/dshq").is_some());
    assert_eq!(
        strings(&c["Healthcheck"]["Test"]),
        ["CMD", "/usr/bin/dshq", "healthcheck"]
    );
    assert_eq!(labels["org.opencontainers.image.version"], VERSION);
    assert_eq!(labels["org.opencontainers.image.licenses"], "MIT");
    assert!(labels["org.opencontainers.image.source"].is_string());
    assert!(labels["org.opencontainers.image.revision"].is_string());

    // Unpacked with umoci: only what the daemon needs.
    let work = tempfile::tempdir().unwrap();
    let layout = format!("oci:{}:dshq", work.path().join("layout").display());
    run(Command::new("skopeo").args(["copy", "--quiet", &archive, &layout]));
    let bundle = work.path().join("bundle");
    run(Command::new("umoci")
        .args(["unpack", "--image"])
        .arg(format!("{}:dshq", work.path().join("layout").display()))
        .arg(&bundle));
    let runtime: Value =
        serde_json::from_slice(&fs::read(bundle.join("config.json")).unwrap()).unwrap();
    assert_eq!(runtime["process"]["user"]["uid"], 10001);
    assert_eq!(
        strings(&runtime["process"]["args"]),
        ["/usr/bin/dshq", "daemon"]
    );
    let root = bundle.join("rootfs");
    let allowed = [
        "usr/bin/dshq",
        "lib64/ld-linux-x86-64.so.2",
        "lib/x86_64-linux-gnu/libc.so.6",
        "lib/x86_64-linux-gnu/libm.so.6",
        "lib/x86_64-linux-gnu/libgcc_s.so.1",
        "etc/passwd",
        "etc/group",
        "etc/nsswitch.conf",
        "etc/ssl/certs/ca-certificates.crt",
    ];
    let files = files_under(&root);
    for f in &files {
        assert!(
            allowed.contains(&f.as_str()) || f.starts_with("usr/share/zoneinfo/"),
            "the image holds {f}, which the daemon does not need"
        );
    }
    for f in allowed {
        assert!(files.contains(f), "the image lacks {f}");
    }
    assert!(files.contains("usr/share/zoneinfo/Europe/Paris"));
    assert!(!root.join("bin/sh").exists() && !root.join("usr/bin/sh").exists());
    let state = fs::metadata(root.join("var/lib/dshq")).unwrap();
    assert_eq!(
        (state.uid(), state.gid(), state.mode() & 0o7777),
        (10001, 10001, 0o700)
    );
    assert!(fs::read_to_string(root.join("etc/passwd"))
        .unwrap()
        .contains("dshq:x:10001:10001:"));

    // The entrypoint under the image's root, as its user, with its environment, in a
    // network namespace of its own (the image listens on 0.0.0.0).
    let ns = NetNs::new();
    let user = (10001, 10001);
    let wd = c["WorkingDir"].as_str().unwrap();
    let image_env: Vec<(String, String)> = env
        .iter()
        .map(|e| {
            let (k, v) = e.split_once('=').unwrap();
            (k.to_string(), v.to_string())
        })
        .collect();
    let said = stdout(&mut contained(
        &ns,
        &root,
        wd,
        user,
        &image_env,
        &["/usr/bin/dshq".into(), "--version".into()],
    ));
    assert_eq!(said, format!("dshq {VERSION}\n"));
    let log = work.path().join("daemon.log");
    let mut entry = strings(&c["Entrypoint"]);
    entry.extend(
        c["Cmd"]
            .as_array()
            .map(|_| strings(&c["Cmd"]))
            .unwrap_or_default(),
    );
    let daemon = contained(&ns, &root, wd, user, &image_env, &entry)
        .stdout(Stdio::null())
        .stderr(fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let daemon = Daemon::started(daemon, log.clone());
    let health = strings(&c["Healthcheck"]["Test"])[1..].to_vec();
    let ready = wait_until(DEADLINE, || {
        contained(&ns, &root, wd, user, &image_env, &health)
            .output()
            .unwrap()
            .status
            .success()
    });
    assert!(
        ready,
        "the image's health check never passed:\n{}",
        daemon.log_text()
    );
    let readyz = stdout(Command::new("nsenter").arg(ns.path()).args([
        "--",
        "curl",
        "-s",
        "http://127.0.0.1:7465/readyz",
    ]));
    assert_eq!(readyz.trim(), "ready");

    // A request dropped into the volume, as the image's user, is taken.
    let volume = root.join("var/lib/dshq");
    let inbox = volume.join("inbox");
    let bytes = serde_json::to_vec(&simple_request("from-the-volume")).unwrap();
    let tmp = inbox.join("tmp/from-the-volume.json");
    fs::write(&tmp, bytes).unwrap();
    std::os::unix::fs::chown(&tmp, Some(10001), Some(10001)).unwrap();
    fs::rename(&tmp, inbox.join("new/from-the-volume.json")).unwrap();
    let list = || {
        let out = contained(
            &ns,
            &root,
            wd,
            user,
            &image_env,
            &["/usr/bin/dshq".into(), "list".into(), "--json".into()],
        )
        .output()
        .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert!(
        wait_until(DEADLINE, || list().contains("\"from-the-volume\"")),
        "the daemon never took the request: {}\n{}",
        list(),
        daemon.log_text()
    );
    assert!(fs::read_dir(inbox.join("new")).unwrap().next().is_none());
    let db = fs::metadata(volume.join("dshq.db")).unwrap();
    assert_eq!(db.uid(), 10001, "the store is not the image user's");
    assert_eq!(daemon.stop(), 0);
}

/// `podman-compose` with the compose file, in `dir` (which holds the secrets).
fn compose(dir: &Path, args: &[&str]) -> Output {
    Command::new("podman-compose")
        .arg("-f")
        .arg(repo().join("contrib/release/compose.yaml"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("podman-compose (pinned in contrib/test/requirements.txt)")
}

#[test]
fn the_compose_file_validates_and_its_audit_key_serves_two_hosts() {
    let dir = tempfile::tempdir().unwrap();
    // The compose file reads ./secrets beside it: a copy of it here, with the secrets
    // the guide's commands make.
    let here = dir.path();
    fs::copy(
        repo().join("contrib/release/compose.yaml"),
        here.join("compose.yaml"),
    )
    .unwrap();
    run_snippet("compose-secrets", here);
    let out = Command::new("podman-compose")
        .args(["-f", "compose.yaml", "config"])
        .current_dir(here)
        .output()
        .expect("podman-compose (pinned in contrib/test/requirements.txt)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json = run(Command::new("python3")
        .args([
            "-c",
            "import json, sys, yaml; print(json.dumps(yaml.safe_load(sys.stdin)))",
        ])
        .stdin(
            fs::File::open({
                let p = here.join("resolved.yaml");
                fs::write(&p, &out.stdout).unwrap();
                p
            })
            .unwrap(),
        ))
    .stdout;
    let file: Value = serde_json::from_slice(&json).unwrap();
    let services = &file["services"];
    let pg = &services["postgres"];
    assert!(pg["healthcheck"]["test"].to_string().contains("pg_isready"));
    assert!(pg["environment"]["POSTGRES_PASSWORD_FILE"].is_string());
    let mut volumes = BTreeSet::new();
    for host in ["dshq-a", "dshq-b"] {
        let s = &services[host];
        assert_eq!(s["image"], format!("localhost/dshq:{VERSION}"), "{host}");
        assert_eq!(
            strings(&s["healthcheck"]["test"]),
            ["CMD", "/usr/bin/dshq", "healthcheck"]
        );
        assert_eq!(s["depends_on"]["postgres"]["condition"], "service_healthy");
        assert!(s["environment"]["DSHQ_CONFIG"].is_string());
        let key = s["secrets"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["target"] == "/var/lib/dshq/audit.key")
            .unwrap_or_else(|| panic!("{host} has no audit.key in its root"));
        assert_eq!(key["source"], "audit.key", "{host} holds another key");
        let vol = strings(&s["volumes"]);
        assert_eq!(vol.len(), 1);
        assert!(vol[0].ends_with(":/var/lib/dshq"), "{vol:?}");
        volumes.insert(vol[0].clone());
        for p in strings(&s["ports"]) {
            assert!(
                p.starts_with("127.0.0.1:"),
                "{host} publishes {p} beyond loopback"
            );
        }
    }
    assert_eq!(volumes.len(), 2, "the two hosts share a root");
    // Resolved for `up` (secrets, volumes, networks) without running anything.
    let dry = compose(here, &["--dry-run", "up", "--no-start"]);
    assert!(
        dry.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&dry.stdout),
        String::from_utf8_lossy(&dry.stderr)
    );

    // The secrets are what dshq takes: the config file checks, and the one key keys a
    // PostgreSQL store from two roots.
    let secrets = here.join("secrets");
    let cfg = secrets.join("store.toml");
    let check = Command::new(bin())
        .args(["config", "check"])
        .arg(&cfg)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    for f in ["pg-password", "store.toml", "audit.key"] {
        let m = fs::metadata(secrets.join(f)).unwrap();
        assert_eq!(m.mode() & 0o077, 0, "{f} is readable by others");
    }
    let url = throwaway::shared()
        .fresh_database()
        .expect("a fresh PostgreSQL database");
    let hosts = [Env::on_store(&url), Env::on_store(&url)];
    for h in &hosts {
        fs::create_dir_all(h.root()).unwrap();
        fs::set_permissions(h.root(), fs::Permissions::from_mode(0o700)).unwrap();
        fs::copy(secrets.join("audit.key"), h.root().join("audit.key")).unwrap();
    }
    hosts[0].register("alice", "default", "10m");
    hosts[1].register("bob", "ops", "10m");
    hosts[1].ask(&simple_request("on-b")).ok();
    for h in &hosts {
        let v = h.run(&["audit", "verify"]).ok();
        assert!(v.stdout.starts_with("ok: "), "{}", v.stdout);
    }
    let key = fs::read(secrets.join("audit.key")).unwrap();
    for h in &hosts {
        assert_eq!(
            fs::read(h.root().join("audit.key")).unwrap(),
            key,
            "a host made its own key"
        );
    }
}

/// A fresh Debian 12 root: made by mmdebstrap (minbase, with adduser, which the package
/// needs, and systemd and man-db, with which `systemd-analyze verify` checks the unit and its
/// man page) once per target directory and kept there as a tarball.
fn debian_12_root(into: &Path) {
    need("mmdebstrap", "mmdebstrap");
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("debian-12-systemd.tar");
    if !cache.exists() {
        let part = cache.with_extension("part.tar");
        let started = std::time::Instant::now();
        run(Command::new("mmdebstrap")
            .args([
                "--quiet",
                "--variant=minbase",
                "--include=adduser,systemd,man-db",
                "bookworm",
            ])
            .arg(&part));
        fs::rename(&part, &cache).unwrap();
        println!("mmdebstrap took {:?}", started.elapsed());
    }
    fs::create_dir_all(into).unwrap();
    run(Command::new("tar")
        .arg("-xf")
        .arg(&cache)
        .arg("-C")
        .arg(into));
}

/// `chroot ROOT argv...`, as root.
fn in_root(root: &Path, argv: &[&str]) -> Output {
    run(Command::new("chroot")
        .arg(root)
        .args(argv)
        .env_clear()
        .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        .env("DEBIAN_FRONTEND", "noninteractive"))
}

/// The `Key=` values of the unit's [Service] section, in order.
fn unit_values(unit: &str, key: &str) -> Vec<String> {
    unit.lines()
        .filter_map(|l| l.strip_prefix(&format!("{key}=")))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_debian_package_installs_runs_and_purges_on_debian_12() {
    let a = artifacts();
    let work = tempfile::tempdir().unwrap();
    let root = work.path().join("root");
    debian_12_root(&root);
    let deb = format!("dshq_{VERSION}-1_amd64.deb");
    // The packaging build packs its relocations: glibc 2.36, which dpkg-shlibdeps misses.
    let depends = stdout(
        Command::new("dpkg-deb")
            .arg("--field")
            .arg(a.deb())
            .arg("Depends"),
    );
    assert!(depends.contains("libc6 (>= 2.36)"), "{depends}");
    fs::copy(a.deb(), root.join("tmp").join(&deb)).unwrap();

    // What the guide says an operator types (apt installs a local file by its path).
    let install = snippet("deb-install").replace("sudo ", "");
    for line in install
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        let argv: Vec<&str> = line.split('#').next().unwrap().split_whitespace().collect();
        let argv: Vec<String> = argv
            .iter()
            .map(|w| w.replace("./dshq_", "/tmp/dshq_"))
            .collect();
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        in_root(&root, &argv);
    }
    let status = String::from_utf8(
        in_root(
            &root,
            &["dpkg-query", "-W", "-f=${Status} ${Conffiles}", "dshq"],
        )
        .stdout,
    )
    .unwrap();
    assert!(status.starts_with("install ok installed"), "{status}");
    assert!(
        status.contains("/etc/dshq/config.toml"),
        "no conffile: {status}"
    );
    for f in [
        "usr/bin/dshq",
        "usr/share/man/man1/dshq.1.gz",
        "usr/share/bash-completion/completions/dshq",
        "usr/share/zsh/vendor-completions/_dshq",
        "usr/share/fish/vendor_completions.d/dshq.fish",
        "usr/lib/systemd/system/dshq.service",
    ] {
        assert!(root.join(f).is_file(), "the package installed no /{f}");
    }
    let passwd = fs::read_to_string(root.join("etc/passwd")).unwrap();
    let user = passwd
        .lines()
        .find(|l| l.starts_with("dshq:"))
        .expect("no system user dshq");
    let fields: Vec<&str> = user.split(':').collect();
    let (uid, gid): (u32, u32) = (fields[2].parse().unwrap(), fields[3].parse().unwrap());
    assert!(uid < 1000, "dshq is not a system user: {user}");
    let cfg = fs::metadata(root.join("etc/dshq/config.toml")).unwrap();
    assert_eq!((cfg.uid(), cfg.gid(), cfg.mode() & 0o777), (0, gid, 0o640));
    let state = fs::metadata(root.join("var/lib/dshq")).unwrap();
    assert_eq!((state.uid(), state.mode() & 0o7777), (uid, 0o700));

    // The unit: hardened, and it verifies.
    let unit = fs::read_to_string(root.join("usr/lib/systemd/system/dshq.service")).unwrap();
    for want in [
        "User=dshq",
        "ProtectSystem=strict",
        "StateDirectory=dshq",
        "NoNewPrivileges=yes",
        "PrivateTmp=yes",
        "CapabilityBoundingSet=",
    ] {
        assert!(unit.lines().any(|l| l == want), "the unit lacks {want}");
    }
    in_root(
        &root,
        &[
            "systemd-analyze",
            "verify",
            "/usr/lib/systemd/system/dshq.service",
        ],
    );

    // The daemon as the unit's command lines and user: ExecStartPre, then ExecStart,
    // with its Environment, in a network namespace of its own.
    let env: Vec<(String, String)> = unit_values(&unit, "Environment")
        .iter()
        .map(|e| {
            let (k, v) = e.split_once('=').unwrap();
            (k.to_string(), v.to_string())
        })
        .collect();
    let argv =
        |line: &str| -> Vec<String> { line.split_whitespace().map(str::to_string).collect() };
    let ns = NetNs::new();
    for pre in unit_values(&unit, "ExecStartPre") {
        run(&mut contained(
            &ns,
            &root,
            "/",
            (uid, gid),
            &env,
            &argv(&pre),
        ));
    }
    let start = unit_values(&unit, "ExecStart");
    assert_eq!(start.len(), 1);
    let log = work.path().join("daemon.log");
    let child = contained(&ns, &root, "/", (uid, gid), &env, &argv(&start[0]))
        .stdout(Stdio::null())
        .stderr(fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let daemon = Daemon::started(child, log);
    let health = ["/usr/bin/dshq".to_string(), "healthcheck".to_string()];
    assert!(
        wait_until(DEADLINE, || contained(
            &ns,
            &root,
            "/",
            (uid, gid),
            &env,
            &health
        )
        .output()
        .unwrap()
        .status
        .success()),
        "the packaged daemon never became ready:\n{}",
        daemon.log_text()
    );
    let status = fs::read_to_string(format!("/proc/{}/status", daemon.pid())).unwrap();
    assert!(
        status.lines().any(|l| l.starts_with("Uid:")
            && l.split_whitespace().nth(1) == Some(uid.to_string().as_str())),
        "the daemon does not run as dshq:\n{status}"
    );
    assert!(root.join("var/lib/dshq/dshq.db").exists());
    // The guide's commands on the service's root, as its user, with the environment sudo
    // gives (not the unit's).
    let sudo_env: Vec<(String, String)> = [
        ("HOME", "/var/lib/dshq"),
        ("USER", "dshq"),
        ("LOGNAME", "dshq"),
        (
            "PATH",
            "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        ),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    for line in snippet("deb-use")
        .lines()
        .filter(|l| l.starts_with("sudo -u dshq "))
    {
        let words = argv(line.split('#').next().unwrap())[3..].to_vec();
        let out = contained(&ns, &root, "/", (uid, gid), &sudo_env, &words)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{line}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(daemon.stop(), 0);

    // remove keeps the state root; purge removes it.
    let remove = snippet("deb-remove").replace("sudo ", "");
    let mut lines = remove
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'));
    let words = |l: &str| -> Vec<String> {
        l.split('#')
            .next()
            .unwrap()
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    let rm = words(lines.next().unwrap());
    in_root(&root, &rm.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(!root.join("usr/bin/dshq").exists());
    assert!(
        root.join("var/lib/dshq/dshq.db").exists(),
        "remove took the state root"
    );
    assert!(
        root.join("etc/dshq/config.toml").exists(),
        "remove took the conffile"
    );
    let purge = words(lines.next().unwrap());
    in_root(&root, &purge.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(
        !root.join("var/lib/dshq").exists(),
        "purge left the state root"
    );
    assert!(
        !root.join("etc/dshq/config.toml").exists(),
        "purge left the conffile"
    );
}
