import java.io.File;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

/**
 * What mqadmin makes of a NameServer's reply bodies, through the release's own classes.
 *
 * Usage: AdminOrder DIR. Each file DIR/NAME.KIND is one case; for each (sorted by name) it
 * prints "=== NAME" and then what mqadmin's command would iterate or print:
 * route: TopicRouteData decoded and written back as topicRoute prints it;
 * topics: TopicList decoded, its topics in iteration order;
 * cluster: ClusterInfo decoded, its clusters in iteration order, then per broker the ids;
 * props: the text read as mqadmin reads GET_NAMESRV_CONFIG, entries in iteration order;
 * addrs: one address a line, put into mqadmin's map of configs, keys in iteration order;
 * names: one name a line, put into a HashSet, in iteration order.
 * Classes are found by name in either release's package.
 */
public class AdminOrder {
    private static Class<?> find(String... names) throws ClassNotFoundException {
        for (String name : names) {
            try {
                return Class.forName(name);
            } catch (ClassNotFoundException ignored) {
            }
        }
        throw new ClassNotFoundException(Arrays.toString(names));
    }

    private static Object decode(byte[] body, String simple) throws Exception {
        Class<?> type = find("org.apache.rocketmq.remoting.protocol.route." + simple,
            "org.apache.rocketmq.remoting.protocol.body." + simple,
            "org.apache.rocketmq.common.protocol.route." + simple,
            "org.apache.rocketmq.common.protocol.body." + simple);
        Class<?> serializable = find("org.apache.rocketmq.remoting.protocol.RemotingSerializable");
        Method m = serializable.getMethod("decode", byte[].class, Class.class);
        return m.invoke(null, body, type);
    }

    private static Object call(Object target, String method) throws Exception {
        return target.getClass().getMethod(method).invoke(target);
    }

    public static void main(String[] args) throws Exception {
        File[] files = new File(args[0]).listFiles();
        Arrays.sort(files);
        for (File file : files) {
            String name = file.getName();
            String kind = name.substring(name.lastIndexOf('.') + 1);
            byte[] body = Files.readAllBytes(file.toPath());
            String text = new String(body, StandardCharsets.UTF_8);
            System.out.println("=== " + name);
            if (kind.equals("route")) {
                Object route = decode(body, "TopicRouteData");
                Method toJson = route.getClass().getMethod("toJson", boolean.class);
                System.out.println(toJson.invoke(route, true));
            } else if (kind.equals("topics")) {
                for (Object topic : (Set<?>) call(decode(body, "TopicList"), "getTopicList")) {
                    System.out.println(topic);
                }
            } else if (kind.equals("cluster")) {
                Object info = decode(body, "ClusterInfo");
                Map<?, ?> clusters = (Map<?, ?>) call(info, "getClusterAddrTable");
                for (Object cluster : clusters.keySet()) {
                    System.out.println("cluster " + cluster);
                }
                Map<?, ?> brokers = (Map<?, ?>) call(info, "getBrokerAddrTable");
                for (Map.Entry<?, ?> e : brokers.entrySet()) {
                    Map<?, ?> addrs = (Map<?, ?>) call(e.getValue(), "getBrokerAddrs");
                    System.out.println("broker " + e.getKey() + " " + addrs.keySet());
                }
            } else if (kind.equals("props")) {
                Class<?> mixAll = find("org.apache.rocketmq.common.MixAll");
                Properties props = (Properties) mixAll.getMethod("string2Properties", String.class)
                    .invoke(null, text);
                for (Map.Entry<Object, Object> e : props.entrySet()) {
                    System.out.println(e.getKey() + "=" + e.getValue());
                }
            } else if (kind.equals("addrs")) {
                Map<String, Properties> configs = new HashMap<>(4);
                for (String addr : text.split("\n")) {
                    configs.put(addr, new Properties());
                }
                for (String addr : configs.keySet()) {
                    System.out.println(addr);
                }
            } else if (kind.equals("names")) {
                Set<String> names = new HashSet<>();
                names.addAll(Arrays.asList(text.split("\n")));
                for (String n : names) {
                    System.out.println(n);
                }
            }
        }
    }
}
