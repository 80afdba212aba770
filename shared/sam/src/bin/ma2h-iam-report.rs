//! `ma2h-iam-report`: after `make test`, every grant of every function beside whether a call of
//! the run used it (the IAM front's decision log). Fails on a denied call (an under-grant) and on
//! a grant no call used that `infra/iam-unused.yaml` does not justify (an over-grant); `--write`
//! puts the table into docs/iam.md between its markers.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use clap::Parser;
use ma2h_sam::iam::front::Logged;
use ma2h_sam::iam::report::{self, Granted, Justifications};
use ma2h_sam::iam::{SamTemplates, policy};
use ma2h_sam::template::Template;

#[derive(Parser)]
#[command(name = "ma2h-iam-report", about = "What make test exercised of each function's IAM grants")]
struct Cli {
    #[arg(long, default_value = "infra/template.yaml")]
    template: PathBuf,
    /// The IAM front's decision log (JSON Lines), from every run that wrote one.
    #[arg(long, required = true)]
    log: Vec<PathBuf>,
    #[arg(long, default_value = "infra/iam-unused.yaml")]
    unused: PathBuf,
    /// Replace the table between `<!-- iam-table:begin -->` and `<!-- iam-table:end -->` here.
    #[arg(long)]
    write: Option<PathBuf>,
}

const BEGIN: &str = "<!-- iam-table:begin -->";
const END: &str = "<!-- iam-table:end -->";

fn main() -> Result<()> {
    let cli = Cli::parse();
    let template = Template::parse(&std::fs::read_to_string(&cli.template).context("reading the template")?)?;
    let sam = SamTemplates::find(&std::env::current_dir()?)?;
    let shown = policy::display_resolver(&template);
    let granted = template
        .functions
        .iter()
        .map(|f| Ok(Granted { function: f.logical_id.clone(), grants: policy::resolved(f, &sam, &shown, &shown)?.1 }))
        .collect::<Result<Vec<_>>>()?;
    let mut log = Vec::new();
    for path in &cli.log {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            log.push(serde_json::from_str::<Logged>(line).with_context(|| format!("{}: {line}", path.display()))?);
        }
    }
    if log.is_empty() {
        bail!("the decision log is empty: no function call went through the IAM front");
    }
    let justified: Justifications = serde_yaml_ng::from_str(&std::fs::read_to_string(&cli.unused).unwrap_or_default())
        .with_context(|| format!("{} is not a map of function → grant → reason", cli.unused.display()))?;
    let r = report::build(&granted, &log, &justified);
    let table = r.markdown();
    if let Some(path) = &cli.write {
        let doc = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let (Some(b), Some(e)) = (doc.find(BEGIN), doc.find(END)) else {
            bail!("{} has no {BEGIN} … {END} markers", path.display());
        };
        let updated = format!("{}{BEGIN}\n{table}{}", &doc[..b], &doc[e..]);
        std::fs::write(path, updated)?;
    } else {
        print!("{table}");
    }
    let calls = log.iter().filter(|l| l.allowed).count();
    eprintln!("ma2h-iam-report: {calls} distinct allowed calls, {} grants, {} denied", r.rows.len(), r.denied.len());
    let problems = r.problems();
    for p in &problems {
        eprintln!("{p}");
    }
    if !problems.is_empty() {
        bail!("{} IAM problem(s)", problems.len());
    }
    Ok(())
}
