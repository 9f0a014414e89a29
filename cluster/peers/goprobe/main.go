// goprobe: the Apache RocketMQ Go client (rocketmq-client-go/v2) against a list of
// NameServers, used as an application uses it.
//
//	goprobe route -n "h1:9876;h2:9876" -t TOPIC
//	    admin route lookup and topic list: QUEUE <broker> <queueId> lines, TOPICS <n>,
//	    HAS-TOPIC true|false; exit 0 when the route has queues.
//	goprobe produce-consume -n "h1:9876;h2:9876" -t TOPIC -c COUNT -timeout 60s
//	    a push consumer (fresh group, from the first offset) started before a producer
//	    sends COUNT messages tagged with this run's id: SENT <status> <broker> <queueId>
//	    <body> and RECEIVED <broker> <queueId> <body> lines, then DONE sent=N received=M
//	    missing=[...]; exit 0 when every message sent was received within the timeout.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/rocketmq-client-go/v2"
	"github.com/apache/rocketmq-client-go/v2/admin"
	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/producer"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

func main() {
	if len(os.Args) < 2 {
		fail("usage: goprobe route|produce-consume -n ADDRS -t TOPIC [-c COUNT] [-timeout D]")
	}
	flags := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	namesrv := flags.String("n", "", "NameServer addresses, ';'-separated")
	topic := flags.String("t", "", "topic")
	count := flags.Int("c", 10, "messages to send")
	timeout := flags.Duration("timeout", 60*time.Second, "how long to wait for them")
	_ = flags.Parse(os.Args[2:])
	if *namesrv == "" || *topic == "" {
		fail("-n and -t are required")
	}
	rlog.SetLogLevel("warn")
	addrs := strings.Split(*namesrv, ";")
	switch os.Args[1] {
	case "route":
		os.Exit(route(addrs, *topic))
	case "produce-consume":
		os.Exit(produceConsume(addrs, *topic, *count, *timeout))
	default:
		fail("unknown mode " + os.Args[1])
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "goprobe: "+msg)
	os.Exit(2)
}

func resolver(addrs []string) primitive.NsResolver {
	return primitive.NewPassthroughResolver(addrs)
}

func route(addrs []string, topic string) int {
	adm, err := admin.NewAdmin(admin.WithResolver(resolver(addrs)))
	if err != nil {
		fmt.Println("ERROR admin:", err)
		return 1
	}
	defer adm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	queues, err := adm.FetchPublishMessageQueues(ctx, topic)
	if err != nil {
		fmt.Println("ERROR route:", err)
		return 1
	}
	for _, q := range queues {
		fmt.Printf("QUEUE %s %d\n", q.BrokerName, q.QueueId)
	}
	list, err := adm.FetchAllTopicList(ctx)
	if err != nil {
		fmt.Println("ERROR topic list:", err)
		return 1
	}
	has := false
	for _, t := range list.TopicList {
		has = has || t == topic
	}
	fmt.Printf("TOPICS %d\nHAS-TOPIC %t\n", len(list.TopicList), has)
	if len(queues) == 0 {
		return 1
	}
	return 0
}

type received struct {
	mu   sync.Mutex
	seen map[string]bool
}

func (r *received) add(body string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen[body] = true
}

func (r *received) missing(sent []string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, body := range sent {
		if !r.seen[body] {
			out = append(out, body)
		}
	}
	return out
}

func produceConsume(addrs []string, topic string, count int, timeout time.Duration) int {
	run := fmt.Sprintf("go-%d", time.Now().UnixNano())
	got := &received{seen: map[string]bool{}}
	c, err := rocketmq.NewPushConsumer(
		consumer.WithGroupName("goprobe-"+run),
		consumer.WithNsResolver(resolver(addrs)),
		consumer.WithConsumeFromWhere(consumer.ConsumeFromFirstOffset),
	)
	if err != nil {
		fmt.Println("ERROR consumer:", err)
		return 1
	}
	err = c.Subscribe(topic, consumer.MessageSelector{}, func(ctx context.Context,
		msgs ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
		for _, m := range msgs {
			body := string(m.Body)
			if strings.HasPrefix(body, run+"-") {
				fmt.Printf("RECEIVED %s %d %s\n", m.Queue.BrokerName, m.Queue.QueueId, body)
				got.add(body)
			}
		}
		return consumer.ConsumeSuccess, nil
	})
	if err == nil {
		err = c.Start()
	}
	if err != nil {
		fmt.Println("ERROR consumer start:", err)
		return 1
	}
	defer c.Shutdown()
	p, err := rocketmq.NewProducer(
		producer.WithNsResolver(resolver(addrs)),
		producer.WithGroupName("goprobe-producer-"+run),
		producer.WithRetry(2),
	)
	if err == nil {
		err = p.Start()
	}
	if err != nil {
		fmt.Println("ERROR producer start:", err)
		return 1
	}
	defer p.Shutdown()
	deadline := time.Now().Add(timeout)
	var sent []string
	for i := 0; i < count; i++ {
		body := fmt.Sprintf("%s-%d", run, i)
		for {
			res, err := p.SendSync(context.Background(), primitive.NewMessage(topic, []byte(body)))
			if err == nil {
				fmt.Printf("SENT %d %s %d %s\n", res.Status, res.MessageQueue.BrokerName,
					res.MessageQueue.QueueId, body)
				sent = append(sent, body)
				break
			}
			if time.Now().After(deadline) {
				fmt.Println("ERROR send:", err)
				return 1
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	for len(got.missing(sent)) > 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	missing := got.missing(sent)
	sort.Strings(missing)
	fmt.Printf("DONE sent=%d received=%d missing=%v\n", len(sent), len(sent)-len(missing), missing)
	if len(missing) > 0 || len(sent) != count {
		return 1
	}
	return 0
}
