import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;

/**
 * A producer and a push consumer that find their NameServers only through the address service
 * ({@code -Drocketmq.namesrv.domain=HOST:PORT}; no namesrvAddr anywhere), as an application runs.
 *
 * <p>Usage: {@code AddrClient TOPIC}. Consumes TOPIC; sends one message every 200 ms, to
 * TOPIC or to the topic named by the last line read from standard input (a topic it never
 * sent to needs a route from a NameServer), until standard input closes. Prints one line per
 * fact: {@code SENT <n> <topic>}, {@code SEND-FAILED <n> <topic> <exception>},
 * {@code RECEIVED <n>}, and {@code NSLIST <addr;addr>} whenever the producer's NameServer list
 * (what its periodic fetch from the address service gave it) changes.
 */
public final class AddrClient {
    private AddrClient() {
    }

    private static volatile String sendTo;

    public static void main(String[] args) throws Exception {
        String topic = args[0];
        sendTo = topic;
        String run = Long.toString(System.currentTimeMillis());
        AtomicInteger received = new AtomicInteger();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("addr-consumer-" + run);
        consumer.setInstanceName("addr-consumer-" + run);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, context) -> {
            for (MessageExt msg : msgs) {
                String body = new String(msg.getBody(), StandardCharsets.UTF_8);
                System.out.printf("RECEIVED %s%n", body.substring(body.lastIndexOf('-') + 1));
                received.incrementAndGet();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();

        DefaultMQProducer producer = new DefaultMQProducer("addr-producer-" + run);
        producer.setInstanceName("addr-producer-" + run);
        producer.setSendMsgTimeout(5000);
        producer.start();

        Thread input = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in,
                StandardCharsets.UTF_8))) {
                for (String line = in.readLine(); line != null; line = in.readLine()) {
                    if (!line.trim().isEmpty()) {
                        sendTo = line.trim();
                    }
                }
            } catch (Exception e) {
                // standard input gone: stop as when it closes
            }
        });
        input.setDaemon(true);
        input.start();

        String shown = "";
        for (int n = 0; input.isAlive(); n++) {
            List<String> list = producer.getDefaultMQProducerImpl().getmQClientFactory()
                .getMQClientAPIImpl().getNameServerAddressList();
            String now = list == null ? "" : String.join(";", list);
            if (!now.equals(shown)) {
                System.out.printf("NSLIST %s%n", now);
                shown = now;
            }
            String to = sendTo;
            try {
                producer.send(new Message(to, "TagA",
                    ("addr-" + run + "-" + n).getBytes(StandardCharsets.UTF_8)));
                System.out.printf("SENT %d %s%n", n, to);
            } catch (Exception e) {
                System.out.printf("SEND-FAILED %d %s %s%n", n, to,
                    e.toString().replace('\n', ' '));
            }
            System.out.flush();
            Thread.sleep(200);
        }
        producer.shutdown();
        consumer.shutdown();
        System.out.flush();
        System.exit(0);
    }
}
