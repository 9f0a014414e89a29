import java.nio.charset.StandardCharsets;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.remoting.protocol.route.TopicRouteData;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * The stock RocketMQ 5.x client against a list of NameServers, one action per run.
 *
 * <ul>
 * <li>{@code send NAMESRV TOPIC COUNT PREFIX}: a producer sends COUNT messages (bodies
 * PREFIX-i); one line {@code SENT <status> <broker> <queueId> <body>} each; exit 0 when every
 * send was SEND_OK.</li>
 * <li>{@code consume NAMESRV TOPIC GROUP PREFIX COUNT TIMEOUT_SECONDS}: a push consumer from the
 * first offset; {@code RECEIVED <broker> <queueId> <body>} per message whose body starts with
 * PREFIX; exit 0 when COUNT distinct bodies arrived in time.</li>
 * <li>{@code route NAMESRV TOPIC}: {@code ROUTE <json>} of an admin's route lookup (with
 * {@code -Drocketmq.zone=Z -Drocketmq.zone.mode=true} the lookup asks for zone Z).</li>
 * <li>{@code lookups NAMESRV TOPIC SECONDS}: a route lookup every 200 ms; {@code OK <n>} (n
 * broker groups) or {@code ERR <exception>} per lookup.</li>
 * </ul>
 */
public final class FiveProbe {
    private FiveProbe() {
    }

    public static void main(String[] args) throws Exception {
        String run = Long.toString(System.currentTimeMillis());
        switch (args[0]) {
            case "send":
                System.exit(send(args[1], args[2], Integer.parseInt(args[3]), args[4], run));
                break;
            case "consume":
                System.exit(consume(args[1], args[2], args[3], args[4],
                    Integer.parseInt(args[5]), Long.parseLong(args[6]) * 1000L, run));
                break;
            case "route":
                System.exit(route(args[1], args[2], run));
                break;
            case "lookups":
                System.exit(lookups(args[1], args[2], Long.parseLong(args[3]) * 1000L, run));
                break;
            default:
                System.err.println("unknown action " + args[0]);
                System.exit(2);
        }
    }

    private static int send(String namesrv, String topic, int count, String prefix, String run)
        throws Exception {
        DefaultMQProducer producer = new DefaultMQProducer("five-probe-producer-" + run);
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("five-probe-producer-" + run);
        producer.setSendMsgTimeout(10000);
        producer.start();
        int ok = 0;
        try {
            for (int i = 0; i < count; i++) {
                String body = prefix + "-" + i;
                SendResult result = producer.send(new Message(topic, body.getBytes(StandardCharsets.UTF_8)));
                System.out.println("SENT " + result.getSendStatus() + " "
                    + result.getMessageQueue().getBrokerName() + " "
                    + result.getMessageQueue().getQueueId() + " " + body);
                if (result.getSendStatus() == SendStatus.SEND_OK) {
                    ok++;
                }
            }
        } finally {
            producer.shutdown();
        }
        return ok == count ? 0 : 1;
    }

    private static int consume(String namesrv, String topic, String group, String prefix, int count,
        long timeoutMillis, String run) throws Exception {
        Set<String> seen = ConcurrentHashMap.newKeySet();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer(group);
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName("five-probe-consumer-" + run);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt msg : msgs) {
                String body = new String(msg.getBody(), StandardCharsets.UTF_8);
                if (body.startsWith(prefix) && seen.add(body)) {
                    System.out.println("RECEIVED " + msg.getBrokerName() + " " + msg.getQueueId()
                        + " " + body);
                }
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        long deadline = System.currentTimeMillis() + timeoutMillis;
        try {
            while (seen.size() < count && System.currentTimeMillis() < deadline) {
                Thread.sleep(100);
            }
        } finally {
            consumer.shutdown();
        }
        System.out.println("DONE received=" + seen.size());
        return seen.size() >= count ? 0 : 1;
    }

    private static DefaultMQAdminExt admin(String namesrv, String run) throws Exception {
        DefaultMQAdminExt admin = new DefaultMQAdminExt(10000);
        admin.setNamesrvAddr(namesrv);
        admin.setInstanceName("five-probe-admin-" + run);
        admin.start();
        return admin;
    }

    private static int route(String namesrv, String topic, String run) throws Exception {
        DefaultMQAdminExt admin = admin(namesrv, run);
        try {
            TopicRouteData route = admin.examineTopicRouteInfo(topic);
            System.out.println("ROUTE " + route.toJson());
        } finally {
            admin.shutdown();
        }
        return 0;
    }

    private static int lookups(String namesrv, String topic, long millis, String run)
        throws Exception {
        DefaultMQAdminExt admin = admin(namesrv, run);
        long deadline = System.currentTimeMillis() + millis;
        try {
            while (System.currentTimeMillis() < deadline) {
                try {
                    TopicRouteData route = admin.examineTopicRouteInfo(topic);
                    System.out.println("OK " + route.getBrokerDatas().size());
                } catch (Exception e) {
                    StringBuilder line = new StringBuilder("ERR");
                    for (Throwable t = e; t != null; t = t.getCause()) {
                        line.append(" | ").append(t.getClass().getSimpleName()).append(": ")
                            .append(String.valueOf(t.getMessage()).replace('\n', ' '));
                    }
                    System.out.println(line);
                }
                System.out.flush();
                Thread.sleep(200);
            }
        } finally {
            admin.shutdown();
        }
        return 0;
    }
}
