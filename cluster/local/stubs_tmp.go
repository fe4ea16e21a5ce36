package local

import "errors"

func (c *Cluster) setupZooKeeper() error { return errors.New("local: zookeeper not yet") }
func (c *Cluster) setupEtcd() error      { return errors.New("local: etcd not yet") }
