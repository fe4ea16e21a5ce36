package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"

	"github.com/jepsen-lite/jepsen-lite/cluster"
)

// engine.go holds what the backend asks of the Docker engine itself, apart
// from any one cluster: the client, the node image, the labels that name a
// run and its harness, and the sweeps that remove what a run or a dead
// harness left.

// Engine returns a client of the Docker engine (DOCKER_HOST, or the local
// socket), or an error wrapping ErrNoEngine when none answers.
func Engine(ctx context.Context) (*testcontainers.DockerClient, error) {
	disableReaper()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNoEngine, err)
	}
	if _, err := cli.Ping(ctx, client.PingOptions{}); err != nil {
		_ = cli.Close()
		return nil, fmt.Errorf("%w: %w", ErrNoEngine, err)
	}
	return cli, nil
}

// ImageName returns the node image Start uses without WithImage.
func ImageName() string {
	if img := os.Getenv(ImageEnv); img != "" {
		return img
	}
	return DefaultImage
}

// CheckImage returns nil when the image exists in the engine, and an error
// wrapping ErrNoImage when it does not.
func CheckImage(ctx context.Context, cli *testcontainers.DockerClient, image string) error {
	return checkImage(ctx, cli, image)
}

func checkImage(ctx context.Context, cli *testcontainers.DockerClient, image string) error {
	if _, err := cli.ImageInspect(ctx, image); err != nil {
		return fmt.Errorf("%w: %s (build it with `make images`): %w", ErrNoImage, image, err)
	}
	return nil
}

var quietOnce sync.Once

// disableReaper turns testcontainers' reaper off unless the user chose, and
// silences testcontainers' process-wide default logger (its banner and
// network messages); this package reports through its errors.
func disableReaper() {
	if _, set := os.LookupEnv(ryukEnv); !set {
		_ = os.Setenv(ryukEnv, "true")
	}
	quietOnce.Do(func() { tclog.SetDefault(tclog.NewNoopLogger()) })
}

// labels returns the labels of everything the run creates.
func (c *Cluster) labels() map[string]string {
	return map[string]string{RunLabel: c.runID, HarnessLabel: harnessID(os.Getpid())}
}

// harnessID is the HarnessLabel of the harness of process pid on this host.
func harnessID(pid int) string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d", host, pid)
}

// sweepDead removes the containers and networks that harnesses on this
// host whose process is gone left behind (a harness killed, or interrupted
// twice during its teardown), run by run (sweep). Those of live harnesses
// and of other hosts are left alone.
func sweepDead(ctx context.Context, cli *testcontainers.DockerClient) error {
	filter := make(client.Filters).Add("label", HarnessLabel)
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: filter})
	if err != nil {
		return fmt.Errorf("docker: list containers: %w", err)
	}
	nets, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: filter})
	if err != nil {
		return fmt.Errorf("docker: list networks: %w", err)
	}
	labels := make([]map[string]string, 0, len(list.Items)+len(nets.Items))
	for _, ctr := range list.Items {
		labels = append(labels, ctr.Labels)
	}
	for _, nw := range nets.Items {
		labels = append(labels, nw.Labels)
	}
	dead := map[string]bool{}
	for _, l := range labels {
		if run, ok := l[RunLabel]; ok && run != "" && deadHarness(l[HarnessLabel]) {
			dead[run] = true
		}
	}
	var errs []error
	for run := range dead {
		errs = append(errs, sweepSettled(ctx, cli, run))
	}
	return errors.Join(errs...)
}

// sweepSettleTime bounds how long sweepSettled tries again.
const sweepSettleTime = 30 * time.Second

// sweepSettled is sweep, tried again while it fails for at most
// sweepSettleTime: a harness that died as it removed its containers may
// have left a removal in progress in the engine, which fails another until
// it is done, and a network is removed only once its containers are.
func sweepSettled(ctx context.Context, cli *testcontainers.DockerClient, runID string) error {
	deadline := time.Now().Add(sweepSettleTime)
	for {
		err := sweep(ctx, cli, runID)
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// deadHarness reports whether id (a HarnessLabel) names a harness on this
// host whose process is gone.
func deadHarness(id string) bool {
	i := strings.LastIndexByte(id, '/')
	if i < 0 {
		return false
	}
	pid, err := strconv.Atoi(id[i+1:])
	return err == nil && pid > 0 && id == harnessID(pid) && !cluster.Alive(pid)
}

// Sweep removes the containers and networks labelled with the run id, or,
// when runID is empty, those of every jepsen-lite run on the engine
// (including runs still going).
func Sweep(ctx context.Context, runID string) error {
	cli, err := Engine(ctx)
	if err != nil {
		return err
	}
	defer cli.Close()
	return sweep(ctx, cli, runID)
}

func sweep(ctx context.Context, cli *testcontainers.DockerClient, runID string) error {
	label := RunLabel
	if runID != "" {
		label += "=" + runID
	}
	filter := make(client.Filters).Add("label", label)
	var errs []error
	list, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: filter})
	if err != nil {
		return fmt.Errorf("docker: list containers: %w", err)
	}
	for _, ctr := range list.Items {
		if _, err := cli.ContainerRemove(ctx, ctr.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil {
			errs = append(errs, fmt.Errorf("docker: remove container %s: %w", ctr.ID, err))
		}
	}
	nets, err := cli.NetworkList(ctx, client.NetworkListOptions{Filters: filter})
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("docker: list networks: %w", err))...)
	}
	for _, nw := range nets.Items {
		if _, err := cli.NetworkRemove(ctx, nw.ID, client.NetworkRemoveOptions{}); err != nil {
			errs = append(errs, fmt.Errorf("docker: remove network %s: %w", nw.Name, err))
		}
	}
	return errors.Join(errs...)
}
