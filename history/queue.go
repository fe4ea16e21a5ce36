package history

import (
	"encoding/json"
	"fmt"
)

// The f values of the queue workload (format version 5): a worker's capture
// of tasks and its set-status of one task, the reaper's pass, and the
// nemesis-process record of the task table the run started with.
const (
	// FCapture is a capture of up to a limit of capturable tasks of one
	// queue: the invoke's key is the queue and its value the limit; the ok's
	// value is the list of tasks captured (Captured).
	FCapture = "capture"
	// FSetStatus is a set-status of one task: the key is the task, the
	// invoke's value the status set (a JSON string), its token the token of
	// the capture it ends, where the capture had one.
	FSetStatus = "set-status"
	// FReap is one pass of the reaper, a process of its own: the invoke's
	// value is the reaper's timeout in ns, the ok's value the list of task
	// ids it set back to a capturable status.
	FReap = "reap"
	// FTasks is the record of the task table a queue run started with: a
	// nemesis-process info op whose value is a list of TaskSpec. Like the
	// header, it is a record, neither a fault nor a heal.
	FTasks = "tasks"
)

// The task statuses of the state-transition lock: done (also the initial
// status) and failed are capturable; in_progress is the capturer's.
const (
	StatusDone       = "done"
	StatusFailed     = "failed"
	StatusInProgress = "in_progress"
)

// TaskSpec is one task of the task table record: its id, its queue and its
// retry budget, the number of captures it allows (nil when the
// implementation keeps no budget).
type TaskSpec struct {
	Task   string `json:"task"`
	Queue  string `json:"queue"`
	Budget *int   `json:"budget,omitempty"`
}

// CapturedTask is one task of a capture ok's value: its id, and what the
// service returned with it where it returns it: the capture's token, the
// retries left after the capture, and the task's queue.
type CapturedTask struct {
	Task   string `json:"task"`
	Token  uint64 `json:"token,omitempty"`
	Budget *int   `json:"budget,omitempty"`
	Queue  string `json:"queue,omitempty"`
}

// TasksOp returns the task table record of tasks, to be recorded by the
// nemesis right after the header.
func TasksOp(tasks []TaskSpec) Op {
	if tasks == nil {
		tasks = []TaskSpec{}
	}
	return Op{Process: NemesisProcess, Type: Info, F: FTasks, Value: JSONValue(tasks)}
}

// IsTasks reports whether op is a task table record.
func (o Op) IsTasks() bool { return o.Process == NemesisProcess && o.F == FTasks }

// TasksOf returns the tasks of a task table record, or an error saying why
// its value is not a list of tasks each with an id.
func TasksOf(op Op) ([]TaskSpec, error) {
	var ts []TaskSpec
	if err := json.Unmarshal(op.Value, &ts); err != nil {
		return nil, fmt.Errorf("task table: %v", err)
	}
	for i, t := range ts {
		if t.Task == "" {
			return nil, fmt.Errorf("task table: task %d has no id", i)
		}
		if t.Budget != nil && *t.Budget < 0 {
			return nil, fmt.Errorf("task table: task %q has a negative budget %d", t.Task, *t.Budget)
		}
	}
	return ts, nil
}

// CapturedOf returns the tasks of a capture ok, or an error saying why its
// value is not a list of tasks each with an id.
func CapturedOf(op Op) ([]CapturedTask, error) {
	if len(op.Value) == 0 {
		return nil, nil
	}
	var ts []CapturedTask
	if err := json.Unmarshal(op.Value, &ts); err != nil {
		return nil, fmt.Errorf("captured tasks: %v", err)
	}
	for i, t := range ts {
		if t.Task == "" {
			return nil, fmt.Errorf("captured tasks: task %d has no id", i)
		}
	}
	return ts, nil
}

// ReapedOf returns the task ids of a reap ok, or an error saying why its
// value is not a list of strings.
func ReapedOf(op Op) ([]string, error) {
	if len(op.Value) == 0 {
		return nil, nil
	}
	var ts []string
	if err := json.Unmarshal(op.Value, &ts); err != nil {
		return nil, fmt.Errorf("reaped tasks: %v", err)
	}
	return ts, nil
}

// StatusOf returns the status a set-status invoke sets ("" when its value
// is not a string).
func StatusOf(op Op) string {
	var s string
	if json.Unmarshal(op.Value, &s) != nil {
		return ""
	}
	return s
}

// validateQueueOp checks the value of a queue op (capture ok, reap ok,
// set-status invoke, task table record) and returns why it cannot be read,
// or nil.
func validateQueueOp(op *Op) error {
	switch {
	case op.IsTasks():
		_, err := TasksOf(*op)
		return err
	case op.Process == NemesisProcess:
		return nil
	case op.F == FCapture && op.Type == Invoke:
		if n, ok := op.Int(); !ok || n < 1 {
			return fmt.Errorf("capture's limit %s is not a positive integer", op.Value)
		}
	case op.F == FCapture && op.Type == OK:
		_, err := CapturedOf(*op)
		return err
	case op.F == FReap && op.Type == OK:
		_, err := ReapedOf(*op)
		return err
	case op.F == FSetStatus && op.Type == Invoke:
		if op.Key == "" {
			return fmt.Errorf("set-status names no task")
		}
		if StatusOf(*op) == "" {
			return fmt.Errorf("set-status's status %s is not a string", op.Value)
		}
	}
	return nil
}
