package local

import "errors"

func (c *Cluster) setupEtcd() error { return errors.New("local: etcd not yet") }
