package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"os"
	"strconv"
)

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

var funcs = template.FuncMap{
	"ratio": func(a, b int) string {
		if b == 0 {
			return "–"
		}
		return strconv.FormatFloat(float64(a)/float64(b), 'f', 3, 64)
	},
	"f4": func(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) },
	"f2": func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) },
	"f1": func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
}

var tmpl = template.Must(template.New("report").Funcs(funcs).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>shardwise rebalance stability report</title>
<style>
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; max-width: 1180px; padding: 1.5em; color: #1d1d1f; }
h1 { font-size: 1.6em; margin-bottom: .2em; }
h2 { margin-top: 2em; border-bottom: 1px solid #ddd; padding-bottom: .2em; }
table { border-collapse: collapse; margin: .8em 0; font-size: 13px; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #ddd; padding: 3px 7px; text-align: right; }
th { background: #f4f5f7; }
td:first-child, th:first-child { text-align: left; }
tr.shardwise td { background: #f2f8ff; }
.figs { display: grid; grid-template-columns: repeat(auto-fill, minmax(520px, 1fr)); gap: 1em; }
figure { margin: 0; border: 1px solid #e3e3e3; padding: .5em; border-radius: 4px; }
figure img { width: 100%; height: auto; }
figcaption { font-size: 13px; color: #555; }
code { background: #f4f5f7; padding: 0 .25em; border-radius: 3px; }
.meta { color: #555; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .2em 1em; }
dt { font-weight: 600; }
</style>
</head>
<body>
<h1>shardwise rebalance stability</h1>
<p class="meta">Generated {{.Generated}} · {{.Machine.Go}} {{.Machine.OS}}/{{.Machine.Arch}} · {{.Machine.CPUs}} CPUs{{if .Machine.CPU}} ({{.Machine.CPU}}){{end}}{{if .Machine.Memory}} · {{.Machine.Memory}}{{end}}</p>
<p>{{.Config.Targets}} targets over {{.Config.Jobs}} jobs, seed {{.Config.Seed}}, reference ε {{.Config.Epsilon}}; scenarios other than <em>scale</em> start with {{.Config.Collectors}} collectors; the trace has {{.Config.TraceSteps}} steps.
Every strategy ran in the same process on the same inputs, so every ratio is a same-run ratio. All data: <a href="report.json">report.json</a>.{{if .Command}} Produced by <code>{{.Command}}</code>.{{end}}</p>

<h2>Definitions</h2>
<dl>
<dt>moved</dt><dd>targets present before and after a step whose collector changed (targets the step added or removed never count).</dd>
<dt>minimum</dt><dd>the least the step required, one definition for every strategy (that of <code>allocation.Result.Min</code>, at the reference ε): the largest of (a) the kept targets whose collector left; (b) ⌊T′·j/N′⌋ when j collectors join, the joiners' share of the mean (at most the kept targets); (c) the load above ⌈(1+ε)·T′/N′⌉ that remaining collectors which were within ⌈(1+ε)·T/N⌉ before the step must shed. (a) is a lower bound for every strategy; (b) only for strategies that give a joiner its share; (c) only for strategies that keep the bound. For shardwise's consistent-hashing at the reference ε it equals the allocator's own Result.Min, which the tests check step by step.</dd>
<dt>balance</dt><dd>the busiest collector's load over the mean load; 1 is perfect.</dd>
<dt>drift</dt><dd>targets present after the first step and at the end of a scenario whose collector differs; 0 after a restart or a scale-up-and-down means the change left no trace.</dd>
<dt>times</dt><dd>wall time of single runs of the update calls, not benchmarks; see <code>make bench</code> for ns/target.</dd>
</dl>

<h2>Stability table</h2>
<p>Per N: first assignment, one collector joins (N→N+1), the joiner leaves (N+1→N), 1% of targets are replaced, then a rolling restart of every collector.</p>
<table>
<tr><th>strategy</th><th>N</th><th>targets</th><th>balance</th><th>balance after join</th><th>moved join</th><th>min join</th><th>join / min</th><th>moved leave</th><th>min leave</th><th>leave / min</th><th>moved churn</th><th>churn min</th><th>restart moved</th><th>assign ms</th><th>join ms</th></tr>
{{range .Table}}<tr><td>{{.Strategy}}</td><td>{{.N}}</td><td>{{.Targets}}</td><td>{{f4 .Balance}}</td><td>{{f4 .BalanceAfterJoin}}</td><td>{{.MovedJoin}}</td><td>{{.MinJoin}}</td><td>{{ratio .MovedJoin .MinJoin}}</td><td>{{.MovedLeave}}</td><td>{{.MinLeave}}</td><td>{{ratio .MovedLeave .MinLeave}}</td><td>{{.MovedChurn}}</td><td>{{.ChurnMin}}</td><td>{{.RestartMoved}}</td><td>{{f1 .AssignMS}}</td><td>{{f1 .JoinMS}}</td></tr>
{{end}}</table>
{{with .Section "table"}}<div class="figs">{{range .}}{{template "fig" .}}{{end}}</div>{{end}}

{{if .Sweep}}<h2>Balance / movement trade-off of consistent-hashing over ε</h2>
<table>
<tr><th>ε</th><th>N</th><th>balance</th><th>balance after join</th><th>join / min</th><th>leave / min</th><th>moved churn</th><th>assign ms</th><th>join ms</th></tr>
{{range .Sweep}}<tr><td>{{.Epsilon}}</td><td>{{.N}}</td><td>{{f4 .Balance}}</td><td>{{f4 .BalanceAfterJoin}}</td><td>{{ratio .MovedJoin .MinJoin}}</td><td>{{ratio .MovedLeave .MinLeave}}</td><td>{{.MovedChurn}}</td><td>{{f1 .AssignMS}}</td><td>{{f1 .JoinMS}}</td></tr>
{{end}}</table>
{{with .Section "sweep"}}<div class="figs">{{range .}}{{template "fig" .}}{{end}}</div>{{end}}{{end}}

{{with .Section "loads"}}<h2>Load per collector around a join</h2>
<div class="figs">{{range .}}{{template "fig" .}}{{end}}</div>{{end}}

{{range .Scenarios}}<h2>Scenario {{.Name}}</h2>
<p>{{.Description}}</p>
<table>
<tr><th>strategy</th><th>steps</th><th>moved</th><th>minimum</th><th>moved / min</th><th>worst step</th><th>moves beyond min</th><th>mean balance</th><th>max balance</th><th>drift</th><th>total ms</th><th>median step ms</th><th>max step ms</th></tr>
{{range .Summaries}}<tr><td>{{.Strategy}}</td><td>{{.Steps}}</td><td>{{.Moved}}</td><td>{{.Min}}</td><td>{{ratio .Moved .Min}}</td><td>{{f2 .WorstRatio}}</td><td>{{.ExcessMoves}}</td><td>{{f4 .MeanBalance}}</td><td>{{f4 .MaxBalance}}</td><td>{{.Drift}}</td><td>{{f1 .TotalMS}}</td><td>{{f2 .MedianMS}}</td><td>{{f2 .MaxMS}}</td></tr>
{{end}}</table>
<div class="figs">{{range $.Section .Name}}{{template "fig" .}}{{end}}</div>
{{end}}
</body>
</html>
{{define "fig"}}<figure><img src="{{.ID}}.svg" alt="{{.Title}}"><figcaption>{{.Caption}} <a href="{{.ID}}.png">PNG</a> · <a href="{{.ID}}.svg">SVG</a></figcaption></figure>{{end}}
`))

// Section returns the figures of one section, in order.
func (r *Report) Section(name string) []Figure {
	var out []Figure
	for _, f := range r.Figures {
		if f.Section == name {
			out = append(out, f)
		}
	}
	return out
}

func writeHTML(path string, r *Report) error {
	var b bytes.Buffer
	if err := tmpl.Execute(&b, r); err != nil {
		return fmt.Errorf("render %s: %w", path, err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
