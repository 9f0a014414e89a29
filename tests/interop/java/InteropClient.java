import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyContext;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * The stock RocketMQ 4.9.8 client against a list of NameServers, used as an application uses it.
 *
 * <p>Usage: {@code InteropClient NAMESRV_LIST TOPIC COUNT TIMEOUT_SECONDS KV_NAMESPACE KV_KEY}.
 * Prints one line per fact for the test to check:
 * <ul>
 * <li>{@code CONFIG <addr> <key>=<value>}: {@code DefaultMQAdminExt.getNameServerConfig} of the
 * whole list, one line per node and key ({@code CONFIG-MISSING <addr>} for a node not in the
 * answer);</li>
 * <li>{@code KV <addr> <value>}: {@code DefaultMQAdminExt.getKVConfig} through an admin client
 * that knows only that node ({@code KV-ERROR <addr> <exception>} when it fails);</li>
 * <li>{@code SENT <status> <broker> <queueId> <body>} per message a {@code DefaultMQProducer}
 * sent, {@code RECEIVED <broker> <queueId> <body>} per message a {@code DefaultMQPushConsumer}
 * (subscribed before the first send) received;</li>
 * <li>{@code DONE sent=N received=M missing=[...]}.</li>
 * </ul>
 * Exit code 0 when every sent message was received within the timeout, 1 otherwise.
 */
public final class InteropClient {
    private InteropClient() {
    }

    public static void main(String[] args) throws Exception {
        String namesrv = args[0];
        String topic = args[1];
        int count = Integer.parseInt(args[2]);
        long timeoutMillis = Long.parseLong(args[3]) * 1000L;
        String kvNamespace = args[4];
        String kvKey = args[5];
        String run = Long.toString(System.currentTimeMillis());
        List<String> addrs = Arrays.asList(namesrv.split(";"));

        DefaultMQAdminExt admin = new DefaultMQAdminExt();
        admin.setNamesrvAddr(namesrv);
        admin.setInstanceName("interop-admin-" + run);
        admin.start();
        try {
            Map<String, Properties> configs = admin.getNameServerConfig(addrs);
            for (String addr : addrs) {
                Properties props = configs.get(addr);
                if (props == null) {
                    System.out.printf("CONFIG-MISSING %s%n", addr);
                    continue;
                }
                for (String key : new TreeSet<>(props.stringPropertyNames())) {
                    System.out.printf("CONFIG %s %s=%s%n", addr, key, props.getProperty(key));
                }
            }
        } finally {
            admin.shutdown();
        }

        for (String addr : addrs) {
            DefaultMQAdminExt one = new DefaultMQAdminExt();
            one.setNamesrvAddr(addr);
            one.setInstanceName("interop-kv-" + run + "-" + addr);
            one.start();
            try {
                System.out.printf("KV %s %s%n", addr, one.getKVConfig(kvNamespace, kvKey));
            } catch (Exception e) {
                System.out.printf("KV-ERROR %s %s%n", addr, e);
            } finally {
                one.shutdown();
            }
        }

        Set<String> received = ConcurrentHashMap.newKeySet();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("interop-consumer-" + run);
        consumer.setNamesrvAddr(namesrv);
        consumer.setInstanceName("interop-consumer-" + run);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener(new MessageListenerConcurrently() {
            @Override
            public ConsumeConcurrentlyStatus consumeMessage(List<MessageExt> msgs,
                ConsumeConcurrentlyContext context) {
                for (MessageExt msg : msgs) {
                    String body = new String(msg.getBody(), StandardCharsets.UTF_8);
                    if (received.add(body)) {
                        System.out.printf("RECEIVED %s %d %s%n", msg.getBrokerName(),
                            msg.getQueueId(), body);
                    }
                }
                return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
            }
        });
        consumer.start();

        DefaultMQProducer producer = new DefaultMQProducer("interop-producer-" + run);
        producer.setNamesrvAddr(namesrv);
        producer.setInstanceName("interop-producer-" + run);
        producer.setSendMsgTimeout(10000);
        producer.start();
        Set<String> sent = new TreeSet<>();
        try {
            for (int i = 0; i < count; i++) {
                String body = "interop-" + run + "-" + i;
                SendResult result = producer.send(
                    new Message(topic, "TagA", body.getBytes(StandardCharsets.UTF_8)));
                System.out.printf("SENT %s %s %d %s%n", result.getSendStatus(),
                    result.getMessageQueue().getBrokerName(),
                    result.getMessageQueue().getQueueId(), body);
                sent.add(body);
            }
        } finally {
            producer.shutdown();
        }

        long deadline = System.currentTimeMillis() + timeoutMillis;
        while (!received.containsAll(sent) && System.currentTimeMillis() < deadline) {
            Thread.sleep(100);
        }
        consumer.shutdown();
        Set<String> missing = new TreeSet<>(sent);
        missing.removeAll(received);
        System.out.printf("DONE sent=%d received=%d missing=%s%n", sent.size(),
            sent.size() - missing.size(), missing);
        System.out.flush();
        System.exit(missing.isEmpty() ? 0 : 1);
    }
}
