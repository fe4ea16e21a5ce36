package local

import "errors"

func (c *Cluster) setupPostgres() error  { return errors.New("local: postgres not yet") }
func (c *Cluster) setupZooKeeper() error { return errors.New("local: zookeeper not yet") }
func (c *Cluster) setupEtcd() error      { return errors.New("local: etcd not yet") }
