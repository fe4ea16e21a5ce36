// CuratorLock puts Apache Curator's InterProcessMutex (Debian's
// libcurator-recipes-java) under jepsen-lite through the lock-client protocol
// (docs/lock-protocol.md): JSON lines on standard input and output, its own
// log on standard error.
//
// Each key is the lock path /locks/<key>, locked with one InterProcessMutex
// per key as Curator's documentation asks (one instance, reused). An acquire
// is acquire(wait_ms, MILLISECONDS): with 0 Curator creates its node and,
// when it is not the lowest, deletes it again and returns false, so 0 tries
// once. The lock's node is ephemeral: the session is the lease (session:
// true, lease_ms = the negotiated session timeout), the token is the node's
// czxid, the owner is the node's path. A ConnectionStateListener reports
// every held lock lost when the connection enters an error state of
// Curator's error policy (SUSPENDED or LOST by default), as Curator's
// documentation of its locks recommends.
//
// Build: make anylang (build/anylang/curator-lock.jar)
// Run:   examples/anylang/curator_lock.sh
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.data.Stat;

public final class CuratorLock {
    /** The session timeout asked for when the options name none, as the built-in zk-recipe does. */
    static final int DEFAULT_SESSION_TIMEOUT_MS = 2000;

    /** A mutex that tells which node it holds: InterProcessMutex keeps that path protected. */
    static final class Mutex extends InterProcessMutex {
        Mutex(CuratorFramework client, String path) {
            super(client, path);
        }

        /** Returns the path of the node through which the calling thread holds the lock, or null. */
        String ourPath() {
            return getLockPath();
        }
    }

    /** A lock this process holds, by its node's path. */
    static final class Held {
        final String key;
        final Mutex mutex;
        boolean lostSent;

        Held(String key, Mutex mutex) {
            this.key = key;
            this.mutex = mutex;
        }
    }

    private final PrintStream out;
    private final long zeroNanos;
    private CuratorFramework client;
    private final Map<String, Mutex> mutexes = new HashMap<>();
    /** The held locks by owner (node path); guarded by out, which the listener's thread shares. */
    private final Map<String, Held> held = new LinkedHashMap<>();
    /** How many times the connection entered an error state; guarded by out. */
    private long suspensions;
    /** When the request being answered was read, in ms since init was read (§3 of the protocol). */
    private double receivedMs;

    CuratorLock(PrintStream out, long zeroNanos) {
        this.out = out;
        this.zeroNanos = zeroNanos;
    }

    public static void main(String[] args) throws Exception {
        // Standard output carries the protocol only: anything a library
        // prints there goes to standard error instead.
        PrintStream out = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line = in.readLine();
        long zero = System.nanoTime();
        if (line == null) {
            return;
        }
        CuratorLock c = new CuratorLock(out, zero);
        c.init(JsonParser.parseString(line).getAsJsonObject());
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            c.receivedMs = c.nowMs();
            c.handle(JsonParser.parseString(line).getAsJsonObject());
        }
        // End of input: the run is over. Closing the client ends the
        // session, which deletes every node this process still has.
        c.client.close();
        System.exit(0);
    }

    private void init(JsonObject m) throws InterruptedException {
        if (!"init".equals(m.get("type").getAsString())) {
            throw new IllegalStateException("first message is not init: " + m);
        }
        StringBuilder connect = new StringBuilder();
        for (JsonElement e : m.getAsJsonArray("endpoints")) {
            if (connect.length() > 0) {
                connect.append(',');
            }
            connect.append(e.getAsJsonObject().get("addr").getAsString());
        }
        if (connect.length() == 0) {
            // The same links, from the environment.
            for (String ep : System.getenv().getOrDefault("JEPSEN_LITE_ENDPOINTS", "").split(",")) {
                if (!ep.isEmpty()) {
                    connect.append(connect.length() > 0 ? "," : "").append(ep.substring(ep.indexOf('@') + 1));
                }
            }
        }
        int sessionTimeout = DEFAULT_SESSION_TIMEOUT_MS;
        JsonObject options = m.has("options") ? m.getAsJsonObject("options") : new JsonObject();
        if (options.has("session-timeout")) {
            sessionTimeout = (int) parseDuration(options.get("session-timeout").getAsString());
        }
        client = CuratorFrameworkFactory.builder()
                .connectString(connect.toString())
                .sessionTimeoutMs(sessionTimeout)
                // An operation waits for a connection at most one session
                // timeout per try, and tries at most four times.
                .connectionTimeoutMs(sessionTimeout)
                .retryPolicy(new ExponentialBackoffRetry(100, 3))
                // The ensemble tracker would replace the connect string by
                // the servers' own addresses from /zookeeper/config: this
                // process must dial only its own links.
                .ensembleTracker(false)
                .build();
        client.getConnectionStateListenable().addListener(this::stateChanged);
        client.start();
        // Init may take 20 s, start-up included: wait for the connection,
        // then warm up, until 12 s after the JVM's main began.
        boolean connected = client.blockUntilConnected(
                (int) Math.max(sessionTimeout, budgetLeftMs()), TimeUnit.MILLISECONDS);
        System.err.printf("curator: connect %s, session timeout %d ms asked, connected: %b%n", connect, sessionTimeout, connected);
        if (connected && budgetLeftMs() > 0) {
            warmUp();
        }

        JsonObject ok = new JsonObject();
        ok.addProperty("type", "init_ok");
        ok.addProperty("now_ms", nowMs());
        ok.addProperty("wall_ms", System.currentTimeMillis());
        ok.addProperty("client", "Apache Curator " + curatorVersion() + " InterProcessMutex (ZooKeeper client "
                + org.apache.zookeeper.Version.getFullVersion().split("[ -]")[0] + ", Java " + System.getProperty("java.version") + ")");
        JsonArray abilities = new JsonArray();
        abilities.add("wait");
        abilities.add("lost");
        ok.add("abilities", abilities);
        send(ok);
    }

    /**
     * warmUp takes and releases a lock on a path of its own, outside /locks,
     * once before init_ok: a JVM loads and compiles the lock's code on its
     * first use, which on a loaded machine can take longer than an op's
     * timeout, while init may take up to 20 s. It gives up when the start-up
     * budget is spent (a thread of its own, so that a server out of reach
     * cannot hold init up) and never waits for the lock.
     */
    private void warmUp() {
        Thread t = new Thread(() -> {
            try {
                InterProcessMutex m = new InterProcessMutex(client, "/jepsen-lite-warmup");
                if (m.acquire(0, TimeUnit.MILLISECONDS)) {
                    m.release();
                }
            } catch (Exception e) {
                System.err.println("curator: warm-up: " + e);
            }
        }, "warm-up");
        t.setDaemon(true);
        t.start();
        try {
            t.join(Math.max(1, budgetLeftMs()));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void handle(JsonObject m) {
        String type = m.get("type").getAsString();
        JsonElement id = m.get("id");
        try {
            switch (type) {
                case "acquire":
                    acquire(id, m.get("key").getAsString(), m.has("wait_ms") ? m.get("wait_ms").getAsDouble() : 0);
                    break;
                case "release":
                    release(id, m.get("owner").getAsString());
                    break;
                default:
                    send(reply("error", id, "unsupported request " + type));
            }
        } catch (Exception e) {
            e.printStackTrace();
            send(reply("error", id, e.toString()));
        }
    }

    private void acquire(JsonElement id, String key, double waitMs) throws Exception {
        Mutex mutex = mutexes.computeIfAbsent(key, k -> new Mutex(client, "/locks/" + k));
        if (mutex.isOwnedByCurrentThread()) {
            // InterProcessMutex is re-entrant: a second acquire would return
            // true without asking ZooKeeper.
            send(reply("error", id, key + " is already held by this process"));
            return;
        }
        long before;
        synchronized (out) {
            before = suspensions;
        }
        if (!mutex.acquire((long) Math.ceil(waitMs), TimeUnit.MILLISECONDS)) {
            // Curator deleted its node again (or found it gone) before it
            // returned false: nothing is left to undo.
            send(reply("not-acquired", id, "held by another"));
            return;
        }
        String path = mutex.ourPath();
        Stat stat = client.checkExists().forPath(path);
        ZooKeeper zk = client.getZookeeperClient().getZooKeeper();
        if (stat == null) {
            send(reply("error", id, "acquired " + path + " but the node is gone (session expired)"));
            return;
        }
        if (stat.getEphemeralOwner() != zk.getSessionId()) {
            send(reply("error", id, String.format("acquired %s but the node belongs to session 0x%x, not the current 0x%x",
                    path, stat.getEphemeralOwner(), zk.getSessionId())));
            return;
        }
        JsonObject ok = reply("ok", id, null);
        ok.addProperty("owner", path);
        ok.addProperty("token", stat.getCzxid());
        ok.addProperty("lease_ms", zk.getSessionTimeout());
        ok.addProperty("session", true);
        synchronized (out) {
            Held h = new Held(key, mutex);
            held.put(path, h);
            send(ok);
            if (suspensions != before) {
                // The connection was suspended while we acquired: Curator
                // cannot say the lock survived it.
                sendLost(path, h);
            }
        }
    }

    private void release(JsonElement id, String owner) throws Exception {
        Held h;
        synchronized (out) {
            h = held.get(owner);
        }
        if (h == null) {
            send(reply("not-held", id, owner + " is not held by this process"));
            return;
        }
        // InterProcessMutex.release() returns normally when the node is
        // already gone (LockInternals.deleteOurPath ignores NoNode), so the
        // node is looked up first: a lock whose node had gone was not ours
        // to release any more.
        Stat stat = client.checkExists().forPath(owner);
        try {
            h.mutex.release();
        } finally {
            synchronized (out) {
                held.remove(owner);
            }
        }
        if (stat == null) {
            send(reply("not-held", id, owner + " was gone before the release (session expired)"));
            return;
        }
        send(reply("ok", id, null));
    }

    /** stateChanged runs on Curator's event thread for every connection state change. */
    private void stateChanged(CuratorFramework c, ConnectionState state) {
        System.err.println("curator: connection " + state);
        if (!c.getConnectionStateErrorPolicy().isErrorState(state)) {
            return;
        }
        synchronized (out) {
            suspensions++;
            for (Map.Entry<String, Held> e : held.entrySet()) {
                sendLost(e.getKey(), e.getValue());
            }
        }
    }

    private void sendLost(String owner, Held h) {
        if (h.lostSent) {
            return;
        }
        h.lostSent = true;
        JsonObject lost = new JsonObject();
        lost.addProperty("type", "lost");
        lost.addProperty("key", h.key);
        lost.addProperty("owner", owner);
        send(lost);
    }

    /** reply makes a reply of type to the request id, with a message when it is not null. */
    private static JsonObject reply(String type, JsonElement id, String message) {
        JsonObject o = new JsonObject();
        o.addProperty("type", type);
        o.add("id", id);
        if (message != null) {
            o.addProperty("message", message);
        }
        return o;
    }

    /**
     * send writes one message. A reply (a message with an id) also says when
     * its request was read and when the reply is written, which lets the
     * harness map this process's clock onto its own.
     */
    private void send(JsonObject o) {
        if (o.has("id")) {
            o.addProperty("received_ms", receivedMs);
            o.addProperty("now_ms", nowMs());
        }
        synchronized (out) {
            out.print(o.toString());
            out.print('\n');
            out.flush();
        }
    }

    /** When main began, for the start-up budget. */
    private static final long MAIN_NANOS = System.nanoTime();
    /** How long start-up (connection and warm-up) may take, from main's beginning. */
    static final long START_BUDGET_MS = 12_000;

    private static long budgetLeftMs() {
        return START_BUDGET_MS - (System.nanoTime() - MAIN_NANOS) / 1_000_000;
    }

    private double nowMs() {
        return (System.nanoTime() - zeroNanos) / 1e6;
    }

    private static String curatorVersion() {
        try (InputStream in = InterProcessMutex.class.getResourceAsStream("/META-INF/maven/org.apache.curator/curator-recipes/pom.properties")) {
            Properties p = new Properties();
            p.load(in);
            return p.getProperty("version", "?");
        } catch (Exception e) {
            return "?";
        }
    }

    private static final Pattern DURATION_PART = Pattern.compile("([0-9]*\\.?[0-9]+)(ns|us|µs|ms|s|m|h)");

    /** parseDuration reads a Go duration ("2s", "1500ms", "1m30s") as milliseconds. */
    static long parseDuration(String s) {
        if (s.equals("0")) {
            return 0;
        }
        Matcher m = DURATION_PART.matcher(s);
        double ms = 0;
        int end = 0;
        while (m.find() && m.start() == end) {
            double v = Double.parseDouble(m.group(1));
            switch (m.group(2)) {
                case "ns": ms += v / 1e6; break;
                case "us": case "µs": ms += v / 1e3; break;
                case "ms": ms += v; break;
                case "s": ms += v * 1e3; break;
                case "m": ms += v * 60e3; break;
                default: ms += v * 3600e3;
            }
            end = m.end();
        }
        if (end != s.length() || end == 0) {
            throw new IllegalArgumentException("not a duration: " + s);
        }
        return Math.round(ms);
    }
}
