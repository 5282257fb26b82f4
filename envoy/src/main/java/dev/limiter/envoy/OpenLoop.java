package dev.limiter.envoy;

import io.grpc.stub.StreamObserver;
import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;
import picocli.CommandLine;

import java.io.PrintStream;
import java.io.PrintWriter;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Predicate;

/**
 * The open loop both gateway benchmarks run ({@code ./limiter rls bench}, {@code ./limiter api bench}):
 * unary gRPC calls at a fixed rate, each with its deadline, latency measured from when each call was
 * due (not when it was sent, so a stall is charged to every call it delays), answers counted by kind,
 * and one JSON line of the result. The benchmarks differ only in the call they make and in how an
 * answer says refused or decided locally.
 */
public final class OpenLoop
{
    private OpenLoop()
    {
    }

    /** Makes call number {@code i} (due now), answering to {@code observer}. */
    @FunctionalInterface
    public interface Call<R>
    {
        void make(long i, StreamObserver<R> observer);
    }

    /**
     * Runs a benchmark command as {@code ./limiter} does: its help and output on these streams, a bad
     * option one line after {@code name} and exit status 2.
     */
    public static int run(final Object command, final String name, final String[] args, final PrintStream out,
        final PrintStream err)
    {
        final CommandLine line = new CommandLine(command);
        line.setOut(new PrintWriter(out, true));
        line.setErr(new PrintWriter(err, true));
        line.setParameterExceptionHandler((e, a) ->
        {
            err.println("limiter " + name + ": " + e.getMessage() + " (./limiter " + name + " --help)");
            return 2;
        });
        return line.execute(args);
    }

    /** The checks of the options both benchmarks have. */
    public static void checkRates(final int rate, final int duration, final int warmup, final long deadlineMillis)
    {
        check(rate >= 1 && rate <= 1_000_000, "--rate: 1 to 1000000 calls per second, was " + rate);
        check(duration >= 1 && duration <= 3600, "--duration: 1 to 3600 s, was " + duration);
        check(warmup >= 0 && warmup <= 600, "--warmup: 0 to 600 s, was " + warmup);
        check(deadlineMillis >= 1 && deadlineMillis <= 60_000, "--deadline-ms: 1 to 60000, was " + deadlineMillis);
    }

    /** @throws IllegalArgumentException with {@code problem} unless {@code ok} */
    public static void check(final boolean ok, final String problem)
    {
        if (!ok)
        {
            throw new IllegalArgumentException(problem);
        }
    }

    /**
     * Calls at {@code rate} a second for {@code seconds}, then waits (up to the deadline and a second
     * more) for the last answers.
     */
    public static <R> void drive(final int rate, final int seconds, final long deadlineMillis, final Tally<R> tally,
        final Call<R> call) throws InterruptedException
    {
        final long interval = 1_000_000_000L / rate;
        final long start = System.nanoTime();
        final long calls = (long)seconds * rate;
        for (long i = 0; i < calls; i++)
        {
            final long due = start + i * interval;
            long wait;
            while ((wait = due - System.nanoTime()) > 0)
            {
                LockSupport.parkNanos(wait);
            }
            tally.sent.incrementAndGet();
            call.make(i, tally.observer(due));
        }
        final long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(deadlineMillis + 1_000);
        while (tally.answered() < tally.sent.get() && System.nanoTime() < end)
        {
            Thread.sleep(5);
        }
    }

    /** What the calls of one run were answered: passed or refused (and of those, decided locally), or errors. */
    public static final class Tally<R>
    {
        private final Predicate<R> refusedBy;
        private final Predicate<R> decidedLocally;
        final AtomicLong sent = new AtomicLong();
        private final AtomicLong passed = new AtomicLong();
        private final AtomicLong refused = new AtomicLong();
        private final AtomicLong local = new AtomicLong();
        private final AtomicLong errors = new AtomicLong();
        private final Recorder latency = new Recorder(3);
        private volatile String firstError;

        /**
         * @param refusedBy      whether an answer refuses the request
         * @param decidedLocally whether an answer is the gateway SDK's own decision (no node answered)
         */
        public Tally(final Predicate<R> refusedBy, final Predicate<R> decidedLocally)
        {
            this.refusedBy = refusedBy;
            this.decidedLocally = decidedLocally;
        }

        long answered()
        {
            return passed.get() + refused.get() + errors.get();
        }

        /**
         * Prints the run as one JSON line on {@code out}, the answers named as the benchmark names them,
         * and the first error a call ended with (if one did) on {@code err}.
         *
         * @param name        the benchmark, as {@code ./limiter} names it ("rls bench")
         * @param passedName  the field of passed answers ("ok", "allowed")
         * @param refusedName the field of refused answers ("overLimit", "refused")
         * @return the exit status: 0, or 1 when no call was answered
         */
        public int report(final String name, final int rate, final int duration, final int targets,
            final String passedName, final String refusedName, final PrintStream out, final PrintStream err)
        {
            out.println(json(rate, duration, targets, passedName, refusedName));
            if (firstError != null)
            {
                err.println("limiter " + name + ": first error: " + firstError);
            }
            return passed.get() + refused.get() == 0 ? 1 : 0;
        }

        private String json(final int rate, final int duration, final int targets, final String passedName,
            final String refusedName)
        {
            final Histogram h = latency.getIntervalHistogram();
            return String.format(Locale.ROOT,
                "{\"rate\":%d,\"durationSeconds\":%d,\"targets\":%d,\"sent\":%d,\"%s\":%d,\"%s\":%d," +
                    "\"decidedLocally\":%d,\"errors\":%d,\"p50Us\":%.1f,\"p90Us\":%.1f,\"p99Us\":%.1f," +
                    "\"p999Us\":%.1f,\"maxUs\":%.1f}",
                rate, duration, targets, sent.get(), passedName, passed.get(), refusedName, refused.get(), local.get(),
                errors.get(), h.getValueAtPercentile(50) / 1e3, h.getValueAtPercentile(90) / 1e3,
                h.getValueAtPercentile(99) / 1e3, h.getValueAtPercentile(99.9) / 1e3, h.getMaxValue() / 1e3);
        }

        StreamObserver<R> observer(final long due)
        {
            return new StreamObserver<>()
            {
                @Override
                public void onNext(final R response)
                {
                    latency.recordValue(Math.max(0, System.nanoTime() - due));
                    (refusedBy.test(response) ? refused : passed).incrementAndGet();
                    if (decidedLocally.test(response))
                    {
                        local.incrementAndGet();
                    }
                }

                @Override
                public void onError(final Throwable t)
                {
                    latency.recordValue(Math.max(0, System.nanoTime() - due));
                    if (firstError == null)
                    {
                        firstError = t.toString();
                    }
                    errors.incrementAndGet();
                }

                @Override
                public void onCompleted()
                {
                }
            };
        }
    }
}
