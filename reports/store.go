package reports

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// The files of a run directory.
const (
	ScenarioFile        = "scenario.yaml"
	HistoryFile         = "history.jsonl"
	ResultsFile         = "results.json"
	ReportFile          = "report.html"
	RunLogFile          = "run.log"
	LinearizabilityFile = "linearizability.html"
	NemesisFile         = "nemesis.jsonl"
	LatestLink          = "latest"
	// RunDirTimestampFormat names a run directory after its start (UTC).
	RunDirTimestampFormat = "20060102T150405.000Z"
)

// NewRunDir creates store/<scenario>/<timestamp>/ for a run starting at now
// and returns its path. Two runs in the same millisecond get distinct dirs.
func NewRunDir(store, scenario string, now time.Time) (string, error) {
	base := filepath.Join(store, scenario, now.UTC().Format(RunDirTimestampFormat))
	dir := base
	for i := 1; ; i++ {
		err := os.MkdirAll(filepath.Dir(dir), 0o755)
		if err == nil {
			err = os.Mkdir(dir, 0o755)
		}
		if err == nil {
			return dir, nil
		}
		if !errors.Is(err, os.ErrExist) || i > 100 {
			return "", fmt.Errorf("reports: creating run dir: %w", err)
		}
		dir = fmt.Sprintf("%s-%d", base, i)
	}
}

// SetLatest points store/latest at runDir (a relative symlink), replacing
// what it pointed at before.
func SetLatest(store, runDir string) error {
	rel, err := filepath.Rel(store, runDir)
	if err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	link := filepath.Join(store, LatestLink)
	tmp := link + ".tmp"
	_ = os.Remove(tmp)
	if err := os.Symlink(rel, tmp); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	if err := os.Rename(tmp, link); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	return nil
}

// WriteResults writes r as runDir/results.json.
func WriteResults(runDir string, r *Results) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	if err := os.WriteFile(filepath.Join(runDir, ResultsFile), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("reports: %w", err)
	}
	return nil
}

// ReadResults reads runDir/results.json.
func ReadResults(runDir string) (*Results, error) {
	data, err := os.ReadFile(filepath.Join(runDir, ResultsFile))
	if err != nil {
		return nil, fmt.Errorf("reports: %w", err)
	}
	var r Results
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("reports: %s: %w", filepath.Join(runDir, ResultsFile), err)
	}
	return &r, nil
}
